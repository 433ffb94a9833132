"""The response-level reward model of section 3.2.2 and appendix D: content empathy and audio alignment.

Input: the user's audio, the user's emotion label, the response text and the response audio.
Output: a content score in [0, 5] (how supportive, appropriate and coherent the response is) and
the probability that the response's vocal delivery matches the user's emotional state.

The paper fine-tunes Qwen2.5-Omni-3B for this. What lives here is a compact model of our own with
the same inputs and outputs, small enough to train on the annotated set on one GPU (or a CPU):

- each audio -> log-mel features (``ml.core.reward.features``) -> strided 1-D convolutions -> mean
  and standard deviation over time (the spread carries pitch and rate variation, which is what
  separates an excited delivery from a comforting one);
- the response text -> a tokenizer (the tiny BPE of ``ml.core.speech.tiny`` by default, any Hugging
  Face tokenizer otherwise) -> a small transformer encoder, pooled from a learned summary token;
- the emotion label -> an embedding (unknown labels share one extra row);
- fusion -> an MLP -> two heads. Content is ordinal (CORAL: one shared score, five thresholds,
  score = sum of P(grade > k)), so it stays inside [0, 5] and rank-consistent; alignment is a
  sigmoid.

Its training data is ``ml.core.reward.ladder``, its training loop ``ml.core.reward.training``,
scoring ``ml.core.reward.scoring``, saving and loading ``ml.core.reward.checkpoint``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ml.core.config import RewardModelConfig
from ml.core.reward.features import log_mel_features, masked_mean, mel_filterbank, strided_length
from ml.core.speech.inputs import SAMPLE_RATE, resample
from ml.core.speech.tiny import build_tiny_tokenizer

MAX_CONTENT_GRADE = 5


@dataclass(frozen=True)
class RewardInput:
    """One response to score. Audio is mono; it is resampled to 16 kHz when ``sample_rate`` differs."""

    user_audio: np.ndarray
    emotion: str
    response_text: str
    response_audio: np.ndarray
    user_sample_rate: int = SAMPLE_RATE
    response_sample_rate: int = SAMPLE_RATE


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
            lengths = strided_length(lengths)
            valid = torch.arange(hidden.shape[-1], device=hidden.device)[None, :] < lengths[:, None]
            # Zeroing padding keeps the next layer's edge frames from reading padded features.
            hidden = hidden * valid[:, None, :]
        sequence = self.norm(hidden.transpose(1, 2))
        mean = masked_mean(sequence, valid)
        spread = masked_mean((sequence - mean.unsqueeze(1)) ** 2, valid).add(1e-5).sqrt()
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
