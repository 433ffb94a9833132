"""What a speech LM reads and returns: examples, padded batches, outputs, and the token-level losses.

Audio is mono float32 at 16 kHz (``SAMPLE_RATE``); ``resample`` converts other rates. The chat and
audio special tokens are Qwen's, shared by both adapters (``ml.core.speech.adapters``) and the
tiny test tokenizer (``ml.core.speech.tiny``).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np
import torch
import torch.nn.functional as F
from scipy.signal import resample_poly

SAMPLE_RATE = 16_000
IGNORE_INDEX = -100
# Audio shorter than this yields a single audio token, which Qwen2-Audio mistakes for the
# legacy (unexpanded) placeholder format.
MIN_AUDIO_SECONDS = 0.1

AUDIO_PLACEHOLDER = "<|AUDIO|>"
AUDIO_BOS = "<|audio_bos|>"
AUDIO_EOS = "<|audio_eos|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"


@dataclass(frozen=True)
class PriorTurn:
    """An earlier exchange of a dialogue: the user's audio (mono float32 at ``sample_rate``;
    resampled to 16 kHz when batched) and the reply the assistant gave (gold, reference or the
    model's own; text only)."""

    audio: np.ndarray
    reply: str
    sample_rate: int = SAMPLE_RATE


@dataclass(frozen=True)
class SpeechExample:
    """One conversation turn: user audio (16 kHz mono float32), instruction, optional target.

    ``history`` holds a dialogue's earlier exchanges, oldest first: they are rendered before the
    current turn (each user audio encoded like the current one), but labels and AAA's audio
    anchor stay on the current turn (``SpeechLM.current_audio_mask``).
    """

    audio: np.ndarray
    prompt: str
    target: str | None = None
    history: tuple[PriorTurn, ...] = ()


@dataclass
class SpeechBatch:
    """Model inputs plus where each row's target starts and how its tokens map to characters.

    ``model_inputs`` holds ``input_ids``, ``attention_mask``, ``input_features``,
    ``feature_attention_mask`` and, when targets were given, ``labels`` (``IGNORE_INDEX`` outside
    the target). ``target_starts[i]`` is the position of row i's first target token (-1 without a
    target); ``target_offsets[i]`` the character range of each target token in ``target_texts[i]``
    (the closing end-of-turn token has an empty range).
    """

    model_inputs: dict[str, torch.Tensor]
    target_texts: list[str | None]
    target_starts: list[int]
    target_offsets: list[list[tuple[int, int]]]

    @property
    def input_ids(self) -> torch.Tensor:
        return self.model_inputs["input_ids"]

    @property
    def attention_mask(self) -> torch.Tensor:
        return self.model_inputs["attention_mask"]

    @property
    def labels(self) -> torch.Tensor | None:
        return self.model_inputs.get("labels")

    def completion_mask(self) -> torch.Tensor:
        """Return a bool B x T mask of target tokens (all False without targets)."""
        labels = self.labels
        if labels is None:
            return torch.zeros_like(self.input_ids, dtype=torch.bool)
        return labels != IGNORE_INDEX

    def to(self, device: torch.device | str) -> SpeechBatch:
        """Return the batch with its tensors on ``device``."""
        moved = {name: tensor.to(device) for name, tensor in self.model_inputs.items()}
        return SpeechBatch(moved, self.target_texts, self.target_starts, self.target_offsets)


@dataclass
class SpeechLMOutput:
    logits: torch.Tensor
    loss: torch.Tensor | None
    # Per-layer B x H x T x T maps, only when asked for with output_attentions on an eager model.
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass(frozen=True)
class EncodedPrompt:
    """A rendered prompt with its audio placeholders expanded and tokenized."""

    input_ids: list[int]
    input_features: torch.Tensor
    feature_attention_mask: torch.Tensor


def resample(audio: np.ndarray, sample_rate: int, target_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Return mono float32 audio resampled to ``target_rate`` (polyphase filter)."""
    samples = np.asarray(audio, dtype=np.float32)
    if samples.ndim == 2:
        samples = samples.mean(axis=0 if samples.shape[0] < samples.shape[1] else 1)
    if sample_rate == target_rate:
        return samples
    divisor = gcd(sample_rate, target_rate)
    resampled: np.ndarray = resample_poly(samples, target_rate // divisor, sample_rate // divisor).astype(
        np.float32
    )
    return resampled


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Return the mean next-token cross-entropy over label positions (float32 for stability)."""
    shifted_labels = labels[:, 1:]
    positions = shifted_labels != IGNORE_INDEX
    if not positions.any():
        return logits.sum() * 0.0
    # Only label positions are upcast: full-vocabulary float32 logits for every token would
    # dominate memory on a 150k vocabulary.
    selected = logits[:, :-1][positions].float()
    return F.cross_entropy(selected, shifted_labels[positions])


def completion_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Return B x T log-probabilities of each label token, aligned with ``labels`` (0 elsewhere).

    Position t holds log p(labels[t] | tokens < t), so the result lines up with
    ``SpeechBatch.completion_mask()`` and with span ranges from ``target_span_token_ranges``.
    """
    logprobs = torch.zeros(labels.shape, dtype=torch.float32, device=logits.device)
    shifted_labels = labels[:, 1:]
    positions = shifted_labels != IGNORE_INDEX
    if positions.any():
        selected = torch.log_softmax(logits[:, :-1][positions].float(), dim=-1)
        picked = selected.gather(-1, shifted_labels[positions].unsqueeze(-1)).squeeze(-1)
        logprobs[:, 1:][positions] = picked
    return logprobs


def checked_audio(audio: np.ndarray) -> np.ndarray:
    """Return the audio as a 1-D float32 array; raise ValueError when it is not mono or too short."""
    samples = np.asarray(audio, dtype=np.float32)
    if samples.ndim != 1:
        raise ValueError(f"expected mono audio (1-D array), got shape {samples.shape}")
    if samples.shape[0] < MIN_AUDIO_SECONDS * SAMPLE_RATE:
        raise ValueError(f"audio is shorter than {MIN_AUDIO_SECONDS} s")
    return samples
