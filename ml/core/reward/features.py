"""The reward model's audio front end: log-mel features, sequence pooling helpers, audio coercion.

Log-mel features use plain ``torch.stft`` and an HTK mel filterbank, so no torchaudio.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ml.core.config import RewardModelConfig
from ml.core.speech.inputs import SAMPLE_RATE

# (text, speech style) -> (samples, sample rate); e.g. a TTS with a style or prosody control.
StyleSynthesizer = Callable[[str, str], tuple[np.ndarray, int]]


def mel_filterbank(n_mels: int, n_fft: int, sample_rate: int = SAMPLE_RATE) -> torch.Tensor:
    """Return an (n_fft // 2 + 1) x n_mels matrix of triangular filters evenly spaced on the HTK mel scale."""
    frequencies = torch.linspace(0, sample_rate / 2, n_fft // 2 + 1, dtype=torch.float64)
    top_mel = 2595.0 * math.log10(1.0 + (sample_rate / 2) / 700.0)
    mel_points = torch.linspace(0, top_mel, n_mels + 2, dtype=torch.float64)
    hz_points = 700.0 * (10 ** (mel_points / 2595.0) - 1.0)
    lower, centre, upper = hz_points[:-2], hz_points[1:-1], hz_points[2:]
    rising = (frequencies[:, None] - lower) / (centre - lower)
    falling = (upper - frequencies[:, None]) / (upper - centre)
    return torch.clamp(torch.minimum(rising, falling), min=0.0).to(torch.float32)


def log_mel_features(
    audios: Sequence[np.ndarray], config: RewardModelConfig, filterbank: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return B x n_mels x F log-mel features of 16 kHz audios (zero past each end) and B frame counts.

    The log is Whisper's: log10 of the power, floored 8 decades under each clip's peak, then
    scaled to roughly [-1, 1]. Loudness is kept on purpose: it is part of the delivery.
    """
    max_samples = int(config.max_audio_seconds * SAMPLE_RATE)
    clips = [np.asarray(audio, dtype=np.float32)[:max_samples] for audio in audios]
    # STFT needs at least one window; silence stands in for missing audio.
    width = max(config.n_fft, *(len(clip) for clip in clips))
    padded = torch.zeros((len(clips), width), dtype=torch.float32)
    for row, clip in enumerate(clips):
        padded[row, : len(clip)] = torch.from_numpy(clip)
    padded = padded.to(filterbank.device)
    window = torch.hann_window(config.n_fft, device=filterbank.device)
    spectrum = torch.stft(
        padded, config.n_fft, config.hop_length, window=window, center=True, return_complex=True
    )
    power = torch.view_as_real(spectrum).pow(2).sum(dim=-1)
    mel = torch.einsum("fm,bft->bmt", filterbank, power)
    log_mel = torch.log10(torch.clamp(mel, min=1e-10))
    frames = torch.tensor(
        [max(len(clip), 1) // config.hop_length + 1 for clip in clips], device=filterbank.device
    )
    valid = torch.arange(log_mel.shape[-1], device=filterbank.device)[None, :] < frames[:, None]
    peak = log_mel.masked_fill(~valid[:, None, :], -math.inf).amax(dim=(1, 2), keepdim=True)
    log_mel = (torch.maximum(log_mel, peak - 8.0) + 4.0) / 4.0
    return log_mel * valid[:, None, :], frames


def strided_length(frames: torch.Tensor) -> torch.Tensor:
    """Return the frame counts after one Conv1d(kernel 5, stride 2, padding 2)."""
    # Conv1d(kernel 5, stride 2, padding 2): L_out = floor((L - 1) / 2) + 1.
    return torch.div(frames - 1, 2, rounding_mode="floor") + 1


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Return the mean over time (dim 1) of the positions the B x T mask marks valid."""
    weights = mask.to(values.dtype).unsqueeze(-1)
    return (values * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def as_float_audio(samples: np.ndarray) -> np.ndarray:
    """Return float32 samples; integer PCM is scaled into [-1, 1)."""
    array = np.asarray(samples)
    if np.issubdtype(array.dtype, np.integer):
        return (array.astype(np.float32) / float(np.iinfo(array.dtype).max + 1)).astype(np.float32)
    return array.astype(np.float32)
