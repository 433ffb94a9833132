"""Every training default, in one place: LoRA, SFT + AAA, RL + SDCA, the reward model, inference.

The command line (``ml.cli``) and the job forms (``ml.jobs.forms``) read their defaults from these
dataclasses rather than repeating the numbers. This module imports neither torch nor Django: the
web process builds its forms from it without loading torch.

Each config round-trips through ``to_dict`` / ``from_dict`` (the shape stored in checkpoint
metadata and in ``Job.parameters``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from webapp.lib.vocabulary import EMOTIONS

AdvantageMode = Literal["sdca", "grpo"]
# The advantage modes as values, for validation and the command line's choices.
ADVANTAGE_MODES: tuple[AdvantageMode, ...] = get_args(AdvantageMode)
# Inference (``ml.core.inference.run_inference``): room for all four spans, one item at a time.
INFERENCE_MAX_NEW_TOKENS = 1024
INFERENCE_BATCH_SIZE = 1
# What a dialogue turn hears after each earlier user turn: the gold (or reference) reply, or the
# model's own answer to that turn (``ml.core.inference.run_dialogue_inference``).
HISTORY_GOLD = "gold"
HISTORY_OWN = "own"
HISTORY_MODES = (HISTORY_GOLD, HISTORY_OWN)
# Keeps L_AAA = -log(rho + eps) finite (and bounded by -log(eps)) when rho reaches 0.
DEFAULT_AAA_EPSILON = 1e-6
# The forms of L_AAA (``ml.core.aaa.aaa_loss``): "target", a hinge that is 0 once rho reaches a
# multiple of its starting value; "linear", 1 - rho; "log", -log(rho + eps).
AaaObjective = Literal["target", "linear", "log"]
AAA_OBJECTIVES: tuple[AaaObjective, ...] = get_args(AaaObjective)
AAA_OBJECTIVE_LABELS: dict[str, str] = {
    "target": "Target: rho up to the target ratio x its start, then no pull",
    "linear": "Linear: 1 - rho",
    "log": "Log: -log rho (never stops pulling)",
}
# Figure 5: AAA "doubles" the perception tokens' attention mass on audio (+136%).
DEFAULT_AAA_TARGET_RATIO = 2.0
_WEIGHT_TOLERANCE = 1e-6


def check_range(name: str, value: float, low: float, high: float) -> None:
    """Raise ValueError unless ``low <= value <= high`` (NaN is out of every range)."""
    if not (low <= value <= high) or math.isnan(value):
        raise ValueError(f"{name}={value} is outside [{low}, {high}]")


def _check_weights(name: str, weights: Sequence[float]) -> None:
    if any(weight < 0 for weight in weights):
        raise ValueError(f"{name} weights must be non-negative, got {tuple(weights)}")
    if abs(sum(weights) - 1.0) > _WEIGHT_TOLERANCE:
        raise ValueError(f"{name} weights must sum to 1, got {tuple(weights)}")


@dataclass(frozen=True)
class LoraSettings:
    """LoRA on the language model's attention projections (section 5.1: LoRA fine-tuning).

    ``train_audio_projector`` keeps the audio projector fully trainable so AAA's gradient, which
    reaches the audio keys, can also move how audio is embedded; ``train_audio_encoder`` trains
    the encoder too (``SFT_LORA``).
    """

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    train_audio_projector: bool = True
    # The whole audio encoder trained alongside the adapters (the paper trains it in SFT); off for
    # RL, whose reference would need the encoder twice.
    train_audio_encoder: bool = False

    @classmethod
    def for_rank(cls, rank: int, *, train_audio_encoder: bool = False) -> LoraSettings:
        """Return the default settings at another rank, alpha scaled to keep the default alpha / rank."""
        return cls(rank=rank, alpha=rank * cls.alpha // cls.rank, train_audio_encoder=train_audio_encoder)

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as JSON-ready values."""
        values = asdict(self)
        values["target_modules"] = list(self.target_modules)
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> LoraSettings:
        """Return settings read back from ``to_dict``."""
        return cls(**{**values, "target_modules": tuple(values.get("target_modules", cls.target_modules))})


# SFT's LoRA option: adapters on the LLM, the encoder and projector trained in full.
SFT_LORA = LoraSettings(train_audio_encoder=True)


@dataclass(frozen=True)
class SftConfig:
    epochs: int = 1
    # When set, the run stops after this many optimizer steps, whatever ``epochs`` says.
    max_steps: int | None = None
    learning_rate: float = 1e-5
    batch_size: int = 4
    gradient_accumulation_steps: int = 1
    warmup_steps: int = 0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    # Chosen by the sweep of bench/conflict_sft.py (0.03, 0.1, 0.3; docs/benchmarks.md): 0.03 made
    # models listen soonest where the words mislead; 0.3 was worse than plain SFT.
    lambda_aaa: float = 0.03
    # What L_AAA is (``ml.core.aaa.aaa_loss``). -log(rho) at lambda 0.1 drove rho from 0.17 to 0.99
    # and cost perception accuracy (issue #25); the target hinge stops pulling at
    # aaa_target_ratio x the starting rho (the first batch's, before any update).
    aaa_objective: AaaObjective = "target"
    aaa_target_ratio: float = DEFAULT_AAA_TARGET_RATIO
    # rho is measured (no gradient) and logged in plain SFT too, so Figure 5 can compare runs.
    log_rho: bool = True
    # Decoder layers (negative = from the end) and heads rho averages over; None = all.
    aaa_layers: tuple[int, ...] | None = None
    aaa_heads: tuple[int, ...] | None = None
    aaa_epsilon: float = DEFAULT_AAA_EPSILON
    # None trains every weight, the audio encoder with the adapter and the LLM, as the paper's SFT
    # does (and the forms and the command line default to); LoRA is an option (``SFT_LORA``).
    lora: LoraSettings | None = None
    gradient_checkpointing: bool = False
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0
    # The paper variant this run is (``ml.core.ablations``); "none" is the full method.
    ablation: str = "none"

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or self.gradient_accumulation_steps < 1:
            raise ValueError("epochs, batch_size and gradient_accumulation_steps must be >= 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be >= 1 when set")
        if self.learning_rate <= 0 or self.lambda_aaa < 0:
            raise ValueError("learning_rate must be positive and lambda_aaa non-negative")
        if self.aaa_objective not in AAA_OBJECTIVES:
            raise ValueError(
                f"unknown aaa_objective {self.aaa_objective!r}: expected one of {AAA_OBJECTIVES}"
            )
        if self.aaa_target_ratio <= 1.0:
            raise ValueError("aaa_target_ratio must be above 1 (a rise over the starting rho)")

    def to_dict(self) -> dict[str, Any]:
        """Return the config as JSON-ready values (for checkpoint metadata and job rows)."""
        values = asdict(self)
        values["lora"] = self.lora.to_dict() if self.lora is not None else None
        values["aaa_layers"] = list(self.aaa_layers) if self.aaa_layers is not None else None
        values["aaa_heads"] = list(self.aaa_heads) if self.aaa_heads is not None else None
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SftConfig:
        """Return a config read back from ``to_dict`` (unknown keys are an error)."""
        parsed = dict(values)
        if parsed.get("lora") is not None:
            parsed["lora"] = LoraSettings.from_dict(parsed["lora"])
        for key in ("aaa_layers", "aaa_heads"):
            if parsed.get(key) is not None:
                parsed[key] = tuple(parsed[key])
        return cls(**parsed)


@dataclass(frozen=True)
class SdcaConfig:
    """The cascaded gate, the reward weights and the span signals of ``ml.core.sdca``."""

    tau: float = 0.6
    content_weight: float = 0.5
    audio_weight: float = 0.5
    reasoning_weight: float = 0.5
    response_weight: float = 0.4
    format_weight: float = 0.1
    # The response span's signal mixes the response and format rewards (r_R of section 3.2.3).
    response_span_response_weight: float = 0.8
    response_span_format_weight: float = 0.2
    std_epsilon: float = 1e-4

    def __post_init__(self) -> None:
        check_range("tau", self.tau, 0.0, 1.0)
        _check_weights("content/audio", (self.content_weight, self.audio_weight))
        _check_weights(
            "reasoning/response/format", (self.reasoning_weight, self.response_weight, self.format_weight)
        )
        _check_weights(
            "response-span response/format",
            (self.response_span_response_weight, self.response_span_format_weight),
        )
        if self.std_epsilon <= 0:
            raise ValueError("std_epsilon must be positive")


@dataclass(frozen=True)
class RlConfig:
    mode: AdvantageMode = "sdca"
    group_size: int = 4
    kl_coef: float = 0.04
    learning_rate: float = 1e-5
    clip_epsilon: float = 0.2
    # Optimizer steps taken on one batch of rollouts (GRPO's mu); ratios depart from 1 after the first.
    updates_per_batch: int = 1
    prompts_per_step: int = 1
    epochs: int = 1
    # When set, the run stops after this many steps, whatever ``epochs`` says.
    max_steps: int | None = None
    max_new_tokens: int = 512
    temperature: float = 1.0
    top_p: float = 1.0
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    sdca: SdcaConfig = field(default_factory=SdcaConfig)
    lora: LoraSettings | None = field(default_factory=LoraSettings)
    gradient_checkpointing: bool = False
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0
    # The paper variant this run is (``ml.core.ablations``); "none" is the full method.
    ablation: str = "none"

    def __post_init__(self) -> None:
        if self.mode not in ADVANTAGE_MODES:
            expected = " or ".join(repr(mode) for mode in ADVANTAGE_MODES)
            raise ValueError(f"unknown mode {self.mode!r}: expected {expected}")
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: advantages are normalised within the group")
        if min(self.updates_per_batch, self.prompts_per_step, self.epochs, self.max_new_tokens) < 1:
            raise ValueError("updates_per_batch, prompts_per_step, epochs and max_new_tokens must be >= 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be >= 1 when set")
        if self.learning_rate <= 0 or self.kl_coef < 0 or self.clip_epsilon <= 0 or self.temperature <= 0:
            raise ValueError("learning_rate, clip_epsilon and temperature must be positive, kl_coef >= 0")

    def to_dict(self) -> dict[str, Any]:
        """Return the config as JSON-ready values (for checkpoint metadata and job rows)."""
        values = asdict(self)
        values["lora"] = self.lora.to_dict() if self.lora is not None else None
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> RlConfig:
        """Return a config read back from ``to_dict`` (unknown keys are an error)."""
        parsed = dict(values)
        if "sdca" in parsed:
            parsed["sdca"] = SdcaConfig(**parsed["sdca"])
        if parsed.get("lora") is not None:
            parsed["lora"] = LoraSettings.from_dict(parsed["lora"])
        return cls(**parsed)


@dataclass(frozen=True)
class RewardTrainingConfig:
    """Training settings of the reward model (its architecture is ``RewardModelConfig``)."""

    # Appendix D.2 trains for 2 epochs.
    epochs: int = 2
    # When set, the run stops after this many optimizer steps, whatever ``epochs`` says.
    max_steps: int | None = None
    batch_size: int = 16
    # Full fine-tuning of a multi-billion-parameter backbone; tiny random backbones want ~5e-3.
    learning_rate: float = 2e-5
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    alignment_loss_weight: float = 1.0
    device: str = "cpu"
    # "bfloat16": bf16 autocast compute over fp32 weights (every reward weight trains, so all stay
    # fp32; ``ml.core.precision``); "float32": plain fp32.
    dtype: str = "float32"
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


@dataclass(frozen=True)
class RewardModelConfig:
    """The reward model's backbone (training settings are ``RewardTrainingConfig``).

    ``backbone`` is a local directory or ``s3://`` URI of a Qwen2.5-Omni (thinker) checkpoint, e.g.
    Qwen2.5-Omni-3B as in appendix D.2, or ``"tiny"`` for a random thinker of the ``tiny_*`` sizes
    (tests, the demo, the benchmarks). A tiny model's audio is cut at ``tiny_audio_seconds``; a real
    one's at Whisper's 30 s.
    """

    backbone: str = "tiny"
    # A checkpoint keeps the emotions it was trained with; new models start from the vocabulary.
    emotions: tuple[str, ...] = EMOTIONS
    tiny_hidden_size: int = 64
    tiny_layers: int = 2
    tiny_audio_seconds: int = 2

    def __post_init__(self) -> None:
        if not self.emotions:
            raise ValueError("emotions must not be empty")
        if not self.backbone.strip():
            raise ValueError('backbone must be "tiny", a model directory or an s3:// URI')
        if self.tiny_hidden_size < 16 or self.tiny_hidden_size % 16:
            raise ValueError("tiny_hidden_size must be a multiple of 16")
        if min(self.tiny_layers, self.tiny_audio_seconds) < 1:
            raise ValueError("tiny_layers and tiny_audio_seconds must be >= 1")

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
