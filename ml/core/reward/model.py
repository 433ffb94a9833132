"""The response-level reward model of section 3.2.2 and appendix D: content empathy and audio alignment.

Input: the user's audio, the user's emotion label, the response text and the response audio.
Output: a content score in [0, 5] (how supportive, appropriate and coherent the response is) and
the probability that the response's vocal delivery matches the user's emotional state.

As in appendix D.2 the backbone is a Qwen2.5-Omni thinker (``Qwen2_5OmniThinkerForConditionalGeneration``)
behind the same ``SpeechLM`` interface EchoChat trains through: any local or ``s3://`` checkpoint
(``ml.core.speech.loading``), or, for tests, the demo and the benchmarks, a tiny random one of the
same class (``ml.core.speech.tiny``). One chat turn holds both audios, the user's before the
emotion label and the written response, the response's after it; the last layer's hidden state
at the turn's last token, with the mean state over the turn, feeds two heads:

- content, ordinal (CORAL: one shared score and five ordered thresholds, score = sum of
  P(grade > k)), so it stays inside [0, 5] and rank-consistent;
- audio alignment, a logit whose sigmoid is P(the delivery suits the user's state).

Every weight trains (D.2 optimises the audio encoder, the adapter and the LLM jointly). Its
training data is ``ml.core.reward.ladder``, its loop ``ml.core.reward.training``, scoring
``ml.core.reward.scoring``, saving and loading ``ml.core.reward.checkpoint``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ml.core.config import RewardModelConfig
from ml.core.speech.inputs import (
    AUDIO_BOS,
    AUDIO_EOS,
    AUDIO_PLACEHOLDER,
    IM_END,
    IM_START,
    MIN_AUDIO_SECONDS,
    SAMPLE_RATE,
    resample,
)
from ml.core.speech.model import SpeechLM

MAX_CONTENT_GRADE = 5
REWARD_BACKBONE_ARCH = "qwen2_5_omni_thinker"
_INSTRUCTION = (
    "Rate the response to the user: how supportive, appropriate and coherent its words are, and "
    "whether its spoken delivery suits the user's emotional state."
)


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


class RewardModel(nn.Module):
    """A Qwen2.5-Omni thinker with a content head and an audio-alignment head."""

    def __init__(self, speech_lm: SpeechLM, config: RewardModelConfig) -> None:
        super().__init__()
        if speech_lm.arch != REWARD_BACKBONE_ARCH:
            raise ValueError(
                f"the reward model needs a Qwen2.5-Omni thinker backbone, not {speech_lm.arch!r}"
            )
        self.config = config
        self.speech_lm = speech_lm
        # Registered as a submodule so parameters(), state_dict() and .to() reach the backbone.
        self.backbone = speech_lm.model
        hidden = int(speech_lm.config.text_config.hidden_size)
        # The heads read the last token's state and the mean state over the turn (see forward).
        self.content_score = nn.Linear(2 * hidden, 1)
        self.content_thresholds = nn.Parameter(torch.linspace(2.0, -2.0, MAX_CONTENT_GRADE))
        self.alignment_head = nn.Linear(2 * hidden, 1)

    @property
    def device(self) -> torch.device:
        return self.content_thresholds.device

    def render_turn(self, emotion: str, response_text: str) -> str:
        """Return the chat turn the backbone reads, with one placeholder per audio (user's first)."""
        audio = f"{AUDIO_BOS}{AUDIO_PLACEHOLDER}{AUDIO_EOS}"
        # A placeholder inside the text would take an audio's place.
        written = response_text.replace(AUDIO_PLACEHOLDER, "").replace("\0", "").strip()
        return (
            f"{IM_START}system\n{self.speech_lm.system_prompt}{IM_END}\n"
            f"{IM_START}user\n{audio}The user's emotional state: {emotion.strip().lower() or 'unknown'}.\n"
            f"A response to the user, as written: {written}\n"
            f"The same response, as spoken: {audio}\n{_INSTRUCTION}{IM_END}\n"
            f"{IM_START}assistant\n"
        )

    def prepare(self, inputs: Sequence[RewardInput]) -> dict[str, torch.Tensor]:
        """Return the backbone's inputs for ``inputs`` (right-padded), on the model's device."""
        if not inputs:
            raise ValueError("cannot score an empty batch")
        rows: list[list[int]] = []
        features: list[torch.Tensor] = []
        feature_masks: list[torch.Tensor] = []
        for item in inputs:
            rendered = self.render_turn(item.emotion, item.response_text)
            for audio, rate in (
                (item.user_audio, item.user_sample_rate),
                (item.response_audio, item.response_sample_rate),
            ):
                audio_features, mask, tokens = self.speech_lm.audio_features(
                    _at_least_min_length(audio, rate)
                )
                features.append(audio_features)
                feature_masks.append(mask)
                # Expand the first unexpanded placeholder; the marker keeps it apart from expanded ones.
                rendered = rendered.replace(AUDIO_PLACEHOLDER, "\0" * tokens, 1)
            expanded = rendered.replace("\0", AUDIO_PLACEHOLDER)
            rows.append(list(self.speech_lm.tokenizer(expanded, add_special_tokens=False)["input_ids"]))
        width = max(len(row) for row in rows)
        input_ids = torch.full((len(rows), width), self.speech_lm.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
        for index, row in enumerate(rows):
            input_ids[index, : len(row)] = torch.tensor(row)
            attention_mask[index, : len(row)] = 1
        batch = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "input_features": torch.cat(features, dim=0),
            "feature_attention_mask": torch.cat(feature_masks, dim=0),
        }
        return {name: tensor.to(self.device) for name, tensor in batch.items()}

    def forward(self, batch: dict[str, torch.Tensor]) -> RewardOutput:
        with self.speech_lm.compute_context():
            outputs = self.backbone(**batch, output_hidden_states=True, use_cache=False)
        last_hidden = outputs.hidden_states[-1]
        mask = batch["attention_mask"].to(last_hidden.dtype).unsqueeze(-1)
        last_position = batch["attention_mask"].sum(dim=1) - 1
        last = last_hidden[torch.arange(last_hidden.shape[0], device=last_hidden.device), last_position]
        # The mean gives every audio and text position a direct path to the heads, which a
        # backbone far from its pre-training (a tiny random one, early fine-tuning) needs.
        mean = (last_hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        pooled = torch.cat([last, mean], dim=-1).to(self.content_thresholds.dtype)
        content_logits = self.content_score(pooled) + self.content_thresholds
        return RewardOutput(
            content_logits=content_logits, alignment_logits=self.alignment_head(pooled).squeeze(-1)
        )


def _at_least_min_length(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Return 16 kHz audio, padded with silence to the shortest length the encoder takes (a
    response with no audio is heard as silence and scored, not refused)."""
    samples = resample(np.asarray(audio, dtype=np.float32), sample_rate)
    shortest = int(MIN_AUDIO_SECONDS * SAMPLE_RATE)
    if len(samples) >= shortest:
        return samples
    return np.concatenate([samples, np.zeros(shortest - len(samples), dtype=np.float32)])


def build_reward_backbone(config: RewardModelConfig, seed: int = 0) -> SpeechLM:
    """Return the configured backbone: a tiny random thinker for ``"tiny"``, else the checkpoint."""
    if config.backbone == "tiny":
        from ml.core.speech.tiny import TinySpec, build_tiny_speech_lm

        spec = TinySpec(
            hidden_size=config.tiny_hidden_size,
            intermediate_size=2 * config.tiny_hidden_size,
            num_hidden_layers=config.tiny_layers,
            audio_chunk_seconds=config.tiny_audio_seconds,
        )
        return build_tiny_speech_lm(REWARD_BACKBONE_ARCH, seed=seed, spec=spec)
    from ml.core.speech.loading import load_speech_lm

    return load_speech_lm(config.backbone)


def build_reward_model(
    config: RewardModelConfig | None = None, seed: int = 0, backbone: SpeechLM | None = None
) -> RewardModel:
    """Return a reward model with freshly initialised heads on the configured (or given) backbone."""
    settings = config or RewardModelConfig()
    speech_lm = backbone if backbone is not None else build_reward_backbone(settings, seed)
    torch.manual_seed(seed)
    return RewardModel(speech_lm, settings)


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
