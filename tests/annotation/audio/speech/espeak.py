"""eSpeak NG speech at 16 kHz with the synthesiser's own word times: the ground truth here."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.signal import resample_poly

from annotation.audio.synthesis import SynthesizedSpeech, synthesize

RATE = 16_000
SENTENCES = (
    "The quick brown fox jumps over the lazy dog near the river bank",
    "Please call Stella and ask her to bring these things with her from the store",
    "I never thought the weather would turn so cold before the end of summer",
)


def at_16k(speech: SynthesizedSpeech) -> npt.NDArray[np.float64]:
    """Return eSpeak's 22.05 kHz samples as 16 kHz floats."""
    samples = speech.samples.astype(np.float64) / 32768
    return np.asarray(resample_poly(samples, RATE, speech.sample_rate), dtype=np.float64)


def spoken(text: str, **options: object) -> tuple[npt.NDArray[np.float64], SynthesizedSpeech]:
    """Return `text` read by eSpeak NG at 16 kHz, with the synthesis (and its word times)."""
    speech = synthesize(text, **options)  # type: ignore[arg-type]
    return at_16k(speech), speech


def with_noise(samples: npt.NDArray[np.float64], snr_db: float, seed: int = 1) -> npt.NDArray[np.float64]:
    """Return `samples` with white noise `snr_db` below their speech (non-silent) power."""
    loud = samples[np.abs(samples) > 1e-3]
    power = float(np.mean(np.square(loud)))
    noise = np.random.default_rng(seed).normal(0.0, np.sqrt(power / 10 ** (snr_db / 10)), len(samples))
    return np.clip(samples + noise, -1.0, 1.0)
