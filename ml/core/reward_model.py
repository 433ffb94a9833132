"""The response-level reward model of section 3.2.2 and appendix D: content empathy and audio alignment.

Input: the user's audio, the user's emotion label, the response text and the response audio.
Output: a content score in [0, 5] (how supportive, appropriate and coherent the response is) and
the probability that the response's vocal delivery matches the user's emotional state.

The paper fine-tunes Qwen2.5-Omni-3B for this. What lives here is a compact model of our own with
the same inputs and outputs, small enough to train on the annotated set on one GPU (or a CPU):

- each audio -> log-mel features (plain ``torch.stft`` and a mel filterbank, so no torchaudio)
  -> strided 1-D convolutions -> mean and standard deviation over time (the spread carries pitch
  and rate variation, which is what separates an excited delivery from a comforting one);
- the response text -> a tokenizer (the tiny BPE of ``ml.core.speech_model`` by default, any Hugging
  Face tokenizer otherwise) -> a small transformer encoder, pooled from a learned summary token;
- the emotion label -> an embedding (unknown labels share one extra row);
- fusion -> an MLP -> two heads. Content is ordinal (CORAL: one shared score, five thresholds,
  score = sum of P(grade > k)), so it stays inside [0, 5] and rank-consistent; alignment is a
  sigmoid.

Training data follows appendix D.1 (``build_reward_training_examples``): per user turn, a ladder of
responses graded 0 (harmful or dismissive) to 5 (fully aligned), each spoken in the style that
fits the user's emotion (aligned), plus some rungs spoken in a mismatched style (not aligned).

A saved reward model is a checkpoint directory in the layout of ``ml.core.checkpoints``: config.json
(with ``model_type``), model.safetensors, the tokenizer files, and metadata.json written last.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import tempfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ml.core.batching import shuffled_batches
from ml.core.checkpoints import (
    METADATA_FILE,
    CheckpointMetadata,
    SavedCheckpoint,
    read_metadata,
    upload_directory,
    verify_checkpoint,
    weight_checksums,
)
from ml.core.speech_model import SAMPLE_RATE, build_tiny_tokenizer, resample, resolve_model_path
from webapp.lib.output_format import ParsedOutput, parse_strategy_fields

REWARD_MODEL_TYPE = "echochat_reward_model"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
MAX_CONTENT_GRADE = 5

ProgressCallback = Callable[[float, str, dict[str, float]], None]
CancelCheck = Callable[[], bool]
# (text, speech style) -> (samples, sample rate); e.g. a TTS with a style or prosody control.
StyleSynthesizer = Callable[[str, str], tuple[np.ndarray, int]]

# Appendix D.1's quality ladder; the descriptions double as instructions for an LLM that writes
# graded candidates (``RewardSourceItem.graded_responses``).
GRADE_LADDER: dict[int, str] = {
    0: "harmful or dismissive",
    1: "emotionally unaware",
    2: "generic or superficially empathetic",
    3: "partially appropriate but strategy-misaligned",
    4: "largely correct with minor flaws",
    5: "fully aligned, high-quality empathetic response",
}

# The speech style (output_format.SPEECH_STYLES) that fits each user emotion, and the one that
# clashes with it: appendix D.1's mismatches are e.g. an excited tone for a negative user state.
_FITTING_STYLE: dict[str, str] = {
    "sad": "comforting",
    "fear": "comforting",
    "angry": "calm",
    "disgust": "calm",
    "neutral": "calm",
    "happy": "excited",
    "surprise": "excited",
}
_CLASHING_STYLE: dict[str, str] = {"comforting": "excited", "calm": "excited", "excited": "comforting"}
_POSITIVE_EMOTIONS = frozenset({"happy", "surprise"})


@dataclass(frozen=True)
class RewardModelConfig:
    """Architecture of the reward model (training settings are ``RewardTrainingConfig``)."""

    emotions: tuple[str, ...] = ("happy", "sad", "angry", "surprise", "disgust", "fear", "neutral")
    n_mels: int = 40
    n_fft: int = 400
    hop_length: int = 160
    # Longer audio is cut: EchoEval utterances average 13 s.
    max_audio_seconds: float = 20.0
    audio_channels: int = 64
    audio_layers: int = 3
    text_dim: int = 64
    text_layers: int = 2
    text_heads: int = 4
    max_text_tokens: int = 256
    hidden_size: int = 128
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if not self.emotions:
            raise ValueError("emotions must not be empty")
        if self.text_dim % self.text_heads:
            raise ValueError("text_dim must be a multiple of text_heads")
        if min(self.audio_layers, self.text_layers, self.max_text_tokens) < 1:
            raise ValueError("audio_layers, text_layers and max_text_tokens must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        """Return the config as JSON-ready values."""
        values = asdict(self)
        values["emotions"] = list(self.emotions)
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> RewardModelConfig:
        """Return a config read back from ``to_dict`` (a ``model_type`` key is ignored)."""
        parsed = {key: value for key, value in values.items() if key != "model_type"}
        if "emotions" in parsed:
            parsed["emotions"] = tuple(parsed["emotions"])
        return cls(**parsed)


@dataclass(frozen=True)
class RewardInput:
    """One response to score. Audio is mono; it is resampled to 16 kHz when ``sample_rate`` differs."""

    user_audio: np.ndarray
    emotion: str
    response_text: str
    response_audio: np.ndarray
    user_sample_rate: int = SAMPLE_RATE
    response_sample_rate: int = SAMPLE_RATE


@dataclass(frozen=True)
class RewardExample:
    """A training example: the input with its content grade (0-5) and audio-alignment label."""

    item_id: str
    inputs: RewardInput
    content_grade: float
    audio_aligned: bool
    response_style: str

    def __post_init__(self) -> None:
        if not 0 <= self.content_grade <= MAX_CONTENT_GRADE:
            raise ValueError(f"content_grade {self.content_grade} is outside [0, {MAX_CONTENT_GRADE}]")


@dataclass(frozen=True)
class RewardScore:
    content: float
    alignment: float


@dataclass(frozen=True)
class RewardSourceItem:
    """A user turn the training ladder is built from (an accepted recording with its gold)."""

    item_id: str
    user_audio: np.ndarray
    sample_rate: int
    emotion: str
    # The grade-5 rung: the imported reference response.
    reference_response: str
    # Graded candidates written elsewhere (e.g. an LLM prompted with GRADE_LADDER); a grade
    # missing here falls back to a template rung derived from the reference.
    graded_responses: Mapping[int, str] = field(default_factory=dict)
    # The gold strategy's speech style; None means the style that fits the emotion.
    speech_style: str | None = None


@dataclass
class RewardBatch:
    """Model-ready tensors for a batch of ``RewardInput``s."""

    user_features: torch.Tensor
    user_frames: torch.Tensor
    response_features: torch.Tensor
    response_frames: torch.Tensor
    token_ids: torch.Tensor
    token_mask: torch.Tensor
    emotion_ids: torch.Tensor


@dataclass
class RewardOutput:
    # B x 5 ordinal logits: logit k is log-odds of "grade > k".
    content_logits: torch.Tensor
    # B alignment logits.
    alignment_logits: torch.Tensor

    def content(self) -> torch.Tensor:
        """Return the expected content grade, in [0, 5]."""
        return torch.sigmoid(self.content_logits).sum(dim=-1)

    def alignment(self) -> torch.Tensor:
        """Return the audio-alignment probability."""
        return torch.sigmoid(self.alignment_logits)


# --- features --------------------------------------------------------------------------


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


def _strided_length(frames: torch.Tensor) -> torch.Tensor:
    # Conv1d(kernel 5, stride 2, padding 2): L_out = floor((L - 1) / 2) + 1.
    return torch.div(frames - 1, 2, rounding_mode="floor") + 1


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = mask.to(values.dtype).unsqueeze(-1)
    return (values * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


# --- the model -------------------------------------------------------------------------


class AudioEncoder(nn.Module):
    """Strided convolutions over log-mel frames, pooled to the mean and spread over time."""

    def __init__(self, config: RewardModelConfig) -> None:
        super().__init__()
        channels = config.audio_channels
        self.convs = nn.ModuleList(
            nn.Conv1d(config.n_mels if index == 0 else channels, channels, 5, stride=2, padding=2)
            for index in range(config.audio_layers)
        )
        self.norm = nn.LayerNorm(channels)
        self.project = nn.Linear(2 * channels, config.hidden_size)

    def forward(self, features: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        hidden = features
        lengths = frames
        for conv in self.convs:
            hidden = F.gelu(conv(hidden))
            lengths = _strided_length(lengths)
            valid = torch.arange(hidden.shape[-1], device=hidden.device)[None, :] < lengths[:, None]
            # Zeroing padding keeps the next layer's edge frames from reading padded features.
            hidden = hidden * valid[:, None, :]
        sequence = self.norm(hidden.transpose(1, 2))
        mean = _masked_mean(sequence, valid)
        spread = _masked_mean((sequence - mean.unsqueeze(1)) ** 2, valid).add(1e-5).sqrt()
        return self.project(torch.cat([mean, spread], dim=-1))


class TextEncoder(nn.Module):
    """A small transformer encoder over token ids, read out from a learned summary token."""

    def __init__(self, config: RewardModelConfig, vocab_size: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, config.text_dim)
        self.positions = nn.Embedding(config.max_text_tokens + 1, config.text_dim)
        self.summary = nn.Parameter(torch.randn(config.text_dim) * 0.02)
        layer = nn.TransformerEncoderLayer(
            config.text_dim,
            config.text_heads,
            dim_feedforward=2 * config.text_dim,
            dropout=config.dropout,
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, config.text_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(config.text_dim)
        self.project = nn.Linear(config.text_dim, config.hidden_size)

    def forward(self, token_ids: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
        batch = token_ids.shape[0]
        # The summary token is never padding, so an empty response still has one valid position.
        tokens = torch.cat([self.summary.expand(batch, 1, -1), self.embedding(token_ids)], dim=1)
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        mask = torch.cat([torch.ones((batch, 1), dtype=torch.bool, device=tokens.device), token_mask], dim=1)
        encoded = self.encoder(tokens + self.positions(positions), src_key_padding_mask=~mask)
        return self.project(self.norm(encoded[:, 0]))


class RewardModel(nn.Module):
    """User audio + emotion + response text and audio -> ordinal content logits and alignment logit."""

    def __init__(self, config: RewardModelConfig, tokenizer: Any) -> None:
        super().__init__()
        self.config = config
        self.tokenizer = tokenizer
        hidden = config.hidden_size
        self.user_audio = AudioEncoder(config)
        self.response_audio = AudioEncoder(config)
        self.text = TextEncoder(config, len(tokenizer))
        # The last row stands for any label outside config.emotions.
        self.emotion = nn.Embedding(len(config.emotions) + 1, hidden)
        self.fuse = nn.Sequential(
            nn.Linear(6 * hidden, 2 * hidden),
            nn.GELU(),
            nn.Dropout(config.dropout),
            nn.Linear(2 * hidden, hidden),
            nn.GELU(),
        )
        # CORAL: one shared score and ordered thresholds, so P(grade > k) falls as k rises.
        self.content_score = nn.Linear(hidden, 1)
        self.content_thresholds = nn.Parameter(torch.linspace(2.0, -2.0, MAX_CONTENT_GRADE))
        self.alignment_head = nn.Linear(hidden, 1)
        self.register_buffer("filterbank", mel_filterbank(config.n_mels, config.n_fft), persistent=False)

    @property
    def device(self) -> torch.device:
        return self.content_thresholds.device

    def emotion_index(self, emotion: str) -> int:
        """Return the embedding row of an emotion label (case-insensitive; unknown -> the last row)."""
        label = emotion.strip().lower()
        return (
            self.config.emotions.index(label) if label in self.config.emotions else len(self.config.emotions)
        )

    def prepare(self, inputs: Sequence[RewardInput]) -> RewardBatch:
        """Return the model-ready tensors for ``inputs``, on the model's device."""
        if not inputs:
            raise ValueError("cannot score an empty batch")
        filterbank: torch.Tensor = self.filterbank  # type: ignore[assignment]
        user_features, user_frames = log_mel_features(
            [resample(item.user_audio, item.user_sample_rate) for item in inputs], self.config, filterbank
        )
        response_features, response_frames = log_mel_features(
            [resample(item.response_audio, item.response_sample_rate) for item in inputs],
            self.config,
            filterbank,
        )
        encoded = self.tokenizer(
            [item.response_text for item in inputs], add_special_tokens=False, return_attention_mask=False
        )["input_ids"]
        rows = [list(ids)[: self.config.max_text_tokens] for ids in encoded]
        width = max(1, *(len(row) for row in rows))
        token_ids = torch.zeros((len(rows), width), dtype=torch.long)
        token_mask = torch.zeros((len(rows), width), dtype=torch.bool)
        for index, row in enumerate(rows):
            token_ids[index, : len(row)] = torch.tensor(row, dtype=torch.long)
            token_mask[index, : len(row)] = True
        emotion_ids = torch.tensor([self.emotion_index(item.emotion) for item in inputs], dtype=torch.long)
        return RewardBatch(
            user_features=user_features,
            user_frames=user_frames,
            response_features=response_features,
            response_frames=response_frames,
            token_ids=token_ids.to(self.device),
            token_mask=token_mask.to(self.device),
            emotion_ids=emotion_ids.to(self.device),
        )

    def forward(self, batch: RewardBatch) -> RewardOutput:
        user = self.user_audio(batch.user_features, batch.user_frames)
        response = self.response_audio(batch.response_features, batch.response_frames)
        text = self.text(batch.token_ids, batch.token_mask)
        emotion = self.emotion(batch.emotion_ids)
        # Products hand the MLP the "does this delivery suit this state" interactions directly.
        fused = self.fuse(
            torch.cat([user, response, text, emotion, response * emotion, response * user], dim=-1)
        )
        content_logits = self.content_score(fused) + self.content_thresholds
        return RewardOutput(
            content_logits=content_logits, alignment_logits=self.alignment_head(fused).squeeze(-1)
        )


def build_reward_model(
    config: RewardModelConfig | None = None, tokenizer: Any = None, seed: int = 0
) -> RewardModel:
    """Return a randomly initialised reward model; the tokenizer defaults to the tiny BPE."""
    torch.manual_seed(seed)
    return RewardModel(
        config or RewardModelConfig(), tokenizer if tokenizer is not None else build_tiny_tokenizer()
    )


def reward_losses(
    output: RewardOutput, content_grades: torch.Tensor, aligned: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (content loss, alignment loss): binary cross-entropies on the ordinal thresholds and the label.

    A grade g sets target min(max(g - k, 0), 1) for threshold k, so fractional grades are allowed.
    """
    thresholds = torch.arange(MAX_CONTENT_GRADE, device=content_grades.device, dtype=torch.float32)
    targets = torch.clamp(content_grades.float()[:, None] - thresholds[None, :], 0.0, 1.0)
    content_loss = F.binary_cross_entropy_with_logits(output.content_logits.float(), targets)
    alignment_loss = F.binary_cross_entropy_with_logits(output.alignment_logits.float(), aligned.float())
    return content_loss, alignment_loss


@torch.no_grad()
def score_responses(
    model: RewardModel, batch: Sequence[RewardInput], batch_size: int = 16
) -> list[RewardScore]:
    """Return one ``RewardScore`` per input, in order (evaluation mode, no gradients)."""
    was_training = model.training
    model.eval()
    scores: list[RewardScore] = []
    try:
        for start in range(0, len(batch), batch_size):
            output = model(model.prepare(batch[start : start + batch_size]))
            scores.extend(
                RewardScore(content=float(content), alignment=float(alignment))
                for content, alignment in zip(
                    output.content().tolist(), output.alignment().tolist(), strict=True
                )
            )
    finally:
        model.train(was_training)
    return scores


@dataclass(frozen=True)
class UserTurn:
    """What the reward model knows about an item when it scores a rollout."""

    user_audio: np.ndarray
    sample_rate: int
    emotion: str


def response_reward_scorer(
    model: RewardModel,
    turns: Mapping[str, UserTurn],
    synthesize: StyleSynthesizer,
    default_style: str = "calm",
) -> Callable[[str, ParsedOutput], RewardScore]:
    """Return a scorer of RL rollouts: the response span is spoken in the speech style the
    rollout's strategy span declares, then scored against the item's user turn.

    A rollout that declares no style is spoken in ``default_style`` rather than the fitting one,
    so leaving the style out earns no alignment for free. An empty response scores 0 and 0.
    """

    def score(item_id: str, parsed: ParsedOutput) -> RewardScore:
        response = parsed.span_text("response")
        if not response:
            return RewardScore(content=0.0, alignment=0.0)
        turn = turns[item_id]
        style = parse_strategy_fields(parsed.span_text("strategy")).speech_style or default_style
        samples, sample_rate = synthesize(response, style)
        reward_input = RewardInput(
            user_audio=_as_float_audio(turn.user_audio),
            emotion=turn.emotion,
            response_text=response,
            response_audio=_as_float_audio(samples),
            user_sample_rate=turn.sample_rate,
            response_sample_rate=sample_rate,
        )
        return score_responses(model, [reward_input])[0]

    return score


# --- training data (appendix D.1) ------------------------------------------------------


def fitting_speech_style(emotion: str) -> str:
    """Return the speech style that suits a user emotion (calm for labels we do not know)."""
    return _FITTING_STYLE.get(emotion.strip().lower(), "calm")


def clashing_speech_style(style: str) -> str:
    """Return the speech style used as a mismatched delivery for responses meant in ``style``."""
    return _CLASHING_STYLE.get(style.strip().lower(), "excited")


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+", text.strip()) if part.strip()]


def _pick(options: Sequence[str], item_id: str, grade: int) -> str:
    # crc32 rather than hash(): the same item gets the same rung in every process.
    return options[zlib.crc32(f"{item_id}:{grade}".encode()) % len(options)]


_DISMISSIVE = (
    "Honestly, that is not a big deal. Stop overreacting and get over it.",
    "Nobody wants to hear about this. Deal with it yourself.",
    "That is your own fault, so I do not see why you are telling me.",
)
_UNAWARE = (
    "Okay. Is there anything else you need?",
    "Noted. Let me know if you want a reminder for anything.",
    "Right. What time is it where you are?",
)
_GENERIC = {
    "negative": (
        "I am sorry to hear that. Everything happens for a reason.",
        "That is too bad. I hope things get better.",
    ),
    "positive": ("That is nice.", "Good for you, I guess."),
}
_PREMATURE_ADVICE = {
    "negative": (
        "You should just move on and focus on something else.",
        "Just try not to think about it and stay busy.",
    ),
    "positive": ("Just do not get too carried away.", "Make sure you plan your next step right away."),
}
_MINOR_FLAW = ("Anyway, I am sure it will all work out.", "Things usually turn out fine in the end.")


def template_graded_responses(reference: str, emotion: str, item_id: str = "") -> dict[int, str]:
    """Return responses for grades 0-5 derived from the reference (grade 5) by templates.

    A stand-in for the paper's LLM augmentation so a ladder always exists; rungs 3 and 4 reuse
    the reference so the model must tell close responses apart, not just spot templates.
    """
    tone = "positive" if emotion.strip().lower() in _POSITIVE_EMOTIONS else "negative"
    sentences = _sentences(reference) or [reference.strip()]
    opening = sentences[0]
    without_last = " ".join(sentences[:-1]) if len(sentences) > 1 else opening
    return {
        0: _pick(_DISMISSIVE, item_id, 0),
        1: _pick(_UNAWARE, item_id, 1),
        2: _pick(_GENERIC[tone], item_id, 2),
        3: f"{opening} {_pick(_PREMATURE_ADVICE[tone], item_id, 3)}",
        4: f"{without_last} {_pick(_MINOR_FLAW, item_id, 4)}",
        5: reference.strip(),
    }


def _as_float_audio(samples: np.ndarray) -> np.ndarray:
    array = np.asarray(samples)
    if np.issubdtype(array.dtype, np.integer):
        return (array.astype(np.float32) / float(np.iinfo(array.dtype).max + 1)).astype(np.float32)
    return array.astype(np.float32)


def build_reward_training_examples(
    items: Sequence[RewardSourceItem],
    synthesize: StyleSynthesizer,
    mismatched_grades: Sequence[int] = (5, 3, 1),
) -> list[RewardExample]:
    """Return appendix D.1's examples for each item.

    Every rung of the 0-5 ladder is spoken in the fitting style (aligned); the rungs in
    ``mismatched_grades`` are also spoken in the clashing style (not aligned), with the same
    content grade, so the two labels vary independently.
    """
    examples: list[RewardExample] = []
    for item in items:
        user_audio = resample(_as_float_audio(item.user_audio), item.sample_rate)
        ladder = template_graded_responses(item.reference_response, item.emotion, item.item_id)
        ladder.update({grade: text for grade, text in item.graded_responses.items() if text.strip()})
        fitting = item.speech_style or fitting_speech_style(item.emotion)
        clashing = clashing_speech_style(fitting)
        for grade in range(MAX_CONTENT_GRADE + 1):
            text = ladder[grade]
            deliveries = [(fitting, True), *([(clashing, False)] if grade in mismatched_grades else [])]
            for style, aligned in deliveries:
                samples, sample_rate = synthesize(text, style)
                examples.append(
                    RewardExample(
                        item_id=item.item_id,
                        inputs=RewardInput(
                            user_audio=user_audio,
                            emotion=item.emotion,
                            response_text=text,
                            response_audio=resample(_as_float_audio(samples), sample_rate),
                        ),
                        content_grade=float(grade),
                        audio_aligned=aligned,
                        response_style=style,
                    )
                )
    return examples


# --- training --------------------------------------------------------------------------


@dataclass(frozen=True)
class RewardTrainingConfig:
    # Appendix D.2 trains for 2 epochs.
    epochs: int = 2
    # When set, the run stops after this many optimizer steps, whatever ``epochs`` says.
    max_steps: int | None = None
    batch_size: int = 16
    learning_rate: float = 3e-4
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    alignment_loss_weight: float = 1.0
    device: str = "cpu"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be >= 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be >= 1 when set")
        if self.learning_rate <= 0 or self.alignment_loss_weight < 0:
            raise ValueError("learning_rate must be positive and alignment_loss_weight non-negative")

    def to_dict(self) -> dict[str, Any]:
        """Return the config as JSON-ready values."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> RewardTrainingConfig:
        """Return a config read back from ``to_dict``."""
        return cls(**values)


@dataclass
class RewardTrainingResult:
    # One entry per optimizer step: step, loss, content_loss, alignment_loss, learning_rate.
    history: list[dict[str, float]] = field(default_factory=list)
    steps_completed: int = 0
    total_steps: int = 0
    cancelled: bool = False

    def last_metrics(self) -> dict[str, float]:
        """Return the last step's metrics ({} before any step)."""
        return dict(self.history[-1]) if self.history else {}


def train_reward_model(
    model: RewardModel,
    examples: Sequence[RewardExample],
    config: RewardTrainingConfig,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
) -> RewardTrainingResult:
    """Train ``model`` in place with AdamW on shuffled mini-batches; return the per-step metrics.

    ``should_cancel()`` is polled before every step; a cancelled run keeps the updates made so far.
    """
    if not examples:
        raise ValueError("reward-model training needs at least one example")
    torch.manual_seed(config.seed)
    order_rng = random.Random(config.seed)
    model.to(config.device)
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )

    steps_per_epoch = math.ceil(len(examples) / config.batch_size)
    total_steps = config.max_steps or config.epochs * steps_per_epoch
    result = RewardTrainingResult(total_steps=total_steps)
    batches = shuffled_batches(len(examples), config.batch_size, order_rng)
    for step in range(total_steps):
        if should_cancel is not None and should_cancel():
            result.cancelled = True
            break
        taken = [examples[index] for index in next(batches)]

        output = model(model.prepare([example.inputs for example in taken]))
        content_loss, alignment_loss = reward_losses(
            output,
            torch.tensor([example.content_grade for example in taken], device=model.device),
            torch.tensor([example.audio_aligned for example in taken], device=model.device),
        )
        loss = content_loss + config.alignment_loss_weight * alignment_loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
        optimizer.step()

        metrics = {
            "step": float(step + 1),
            "loss": float(loss.detach()),
            "content_loss": float(content_loss.detach()),
            "alignment_loss": float(alignment_loss.detach()),
            "learning_rate": config.learning_rate,
        }
        result.history.append(metrics)
        result.steps_completed = step + 1
        if on_progress is not None:
            on_progress((step + 1) / total_steps, f"step {step + 1}/{total_steps}", dict(metrics))
    model.eval()
    return result


def evaluate_reward_model(
    model: RewardModel, examples: Sequence[RewardExample], batch_size: int = 16
) -> dict[str, float]:
    """Return content MAE, alignment accuracy (threshold 0.5) and pairwise content-ranking accuracy.

    Ranking accuracy is over pairs of the same item with different grades: how often the higher
    grade gets the higher score (the property RL's group normalisation relies on).
    """
    if not examples:
        raise ValueError("evaluation needs at least one example")
    scores = score_responses(model, [example.inputs for example in examples], batch_size)
    errors = [
        abs(score.content - example.content_grade) for score, example in zip(scores, examples, strict=True)
    ]
    correct = [
        (score.alignment >= 0.5) == example.audio_aligned
        for score, example in zip(scores, examples, strict=True)
    ]
    ordered = ranked = 0
    for first in range(len(examples)):
        for second in range(first + 1, len(examples)):
            a, b = examples[first], examples[second]
            if a.item_id != b.item_id or a.content_grade == b.content_grade:
                continue
            ranked += 1
            higher, lower = (first, second) if a.content_grade > b.content_grade else (second, first)
            ordered += scores[higher].content > scores[lower].content
    return {
        "content_mae": float(np.mean(errors)),
        "alignment_accuracy": float(np.mean(correct)),
        "ranking_accuracy": ordered / ranked if ranked else math.nan,
    }


# --- checkpoints -----------------------------------------------------------------------


@dataclass
class LoadedRewardModel:
    model: RewardModel
    metadata: CheckpointMetadata
    local_path: Path


def save_reward_model(
    model: RewardModel,
    destination: str | Path,
    training_config: Mapping[str, Any] | None = None,
    dataset_snapshot_ids: Sequence[str] = (),
    metrics: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> SavedCheckpoint:
    """Write the model to a local directory or an ``s3://`` prefix (metadata.json last); return where."""
    from safetensors.torch import save_file

    target = str(destination)
    uploading = target.startswith("s3://")
    local = Path(tempfile.mkdtemp(prefix="echochat-reward-")) if uploading else Path(target)
    local.mkdir(parents=True, exist_ok=True)
    (local / CONFIG_FILE).write_text(
        json.dumps({"model_type": REWARD_MODEL_TYPE, **model.config.to_dict()}, indent=2)
    )
    state = {name: tensor.detach().cpu().contiguous() for name, tensor in model.state_dict().items()}
    save_file(state, str(local / WEIGHTS_FILE))
    model.tokenizer.save_pretrained(local)
    metadata = CheckpointMetadata(
        arch=REWARD_MODEL_TYPE,
        created_at=datetime.now(UTC).isoformat(),
        config=json.loads(json.dumps(dict(training_config or {}), default=str)),
        dataset_snapshot_ids=[str(snapshot) for snapshot in dataset_snapshot_ids],
        metrics=json.loads(json.dumps(dict(metrics or {}), default=str)),
        weight_sha256=weight_checksums(local),
        extra=dict(extra or {}),
    )
    (local / METADATA_FILE).write_text(metadata.to_json())
    if uploading:
        try:
            upload_directory(local, target)
        finally:
            shutil.rmtree(local, ignore_errors=True)
    return SavedCheckpoint(local_path=local, uri=target, metadata=metadata)


def load_reward_model(
    path_or_uri: str | Path,
    device: torch.device | str = "cpu",
    verify: bool = False,
    cache_dir: Path | None = None,
) -> LoadedRewardModel:
    """Return the reward model saved at a local directory or ``s3://`` prefix, in evaluation mode."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    local = resolve_model_path(path_or_uri, cache_dir)
    metadata = read_metadata(local)
    if verify:
        verify_checkpoint(local, metadata)
    stored = json.loads((local / CONFIG_FILE).read_text())
    if stored.get("model_type") != REWARD_MODEL_TYPE:
        raise ValueError(f"{local} is not a reward model (model_type {stored.get('model_type')!r})")
    model = RewardModel(RewardModelConfig.from_dict(stored), AutoTokenizer.from_pretrained(local))
    model.load_state_dict(load_file(str(local / WEIGHTS_FILE)))
    model.to(device)
    model.eval()
    return LoadedRewardModel(model=model, metadata=metadata, local_path=local)
