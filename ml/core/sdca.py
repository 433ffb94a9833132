"""Cascaded-gated rewards and Step-Decomposed Credit Assignment (paper sections 3.2.1-3.2.3).

Per rollout, stage scores s1 (perception), s2 (reasoning), s3 (strategy) in [0, 1] are gated:

    g1 = [s1 >= tau], g2 = [s2 >= tau]
    q1 = s1, q2 = g1 * s2, q3 = g1 * g2 * s3           (a stage counts only if earlier ones held)
    R_reas  = (q1 + q2 + q3) / 3
    r_resp  = w_c * content / 5 + w_a * audio_alignment  (w_c + w_a = 1)
    R_total = w_reas * R_reas + w_resp * r_resp + w_fmt * r_fmt   (0.5 / 0.4 / 0.1 by default)

SDCA gives each output-format span the group-normalised advantage of its own signal:
perception <- q1, reasoning <- q2, strategy <- q3, response <- 0.8 r_resp + 0.2 r_fmt.
Normalisation over the G rollouts of one prompt is (x - mean) / (std + 1e-4) with the sample
standard deviation (ddof=1), and 0 when all G values are equal (no signal to rank on). Tokens
outside the four spans (tags, whitespace, the end-of-turn token) get the normalised R_total,
which is what every completion token gets under vanilla GRPO.

A rollout whose judge failed (``judge_failed``: no usable answer for one of its stages) has no
score, not a score of 0 (appendix C.3 excludes judge errors): it is left out of its group's
mean and standard deviation and its advantages are 0, so the policy is neither punished nor
rewarded for the judge's error. A group with fewer than two judged rollouts has no signal.

What the weights 0.5 / 0.4 / 0.1 mean under SDCA. Normalising each span separately would erase
them (any positive scale of a signal normalises to the same advantage), so they would reach only
the tag and end-of-turn tokens. Instead each span's normalised advantage is scaled by the share
of R_total its signal carries: each reasoning stage is a third of R_reas (w_reas / 3 each), and
the response span's signal mixes the response and format rewards (w_resp + w_fmt). The shares
sum to 1; they are multiplied by the number of spans, so their mean is 1 and a unit-variance
advantage keeps GRPO's scale at equal learning rate. With the defaults: perception, reasoning
and strategy x 2/3 each, response x 2; the three reasoning spans together weigh as much as the
response span, as w_reas = w_resp + w_fmt = 0.5 says. Setting a weight to 0 (an ablation) removes
that credit from SDCA as it does from R_total.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from ml.core.config import ADVANTAGE_MODES, AdvantageMode, SdcaConfig, check_range
from webapp.lib.output_format import SPAN_NAMES, SpanName


@dataclass(frozen=True)
class RolloutScores:
    """The scores of one rollout: judge stage scores normalised to [0, 1], the reward model's
    content score in [0, 5] and audio-alignment in [0, 1], and the parser's format reward."""

    perception: float
    reasoning: float
    strategy: float
    content: float
    audio_alignment: float
    format: float
    judge_failed: bool = False

    def __post_init__(self) -> None:
        for name in ("perception", "reasoning", "strategy", "audio_alignment", "format"):
            check_range(name, getattr(self, name), 0.0, 1.0)
        check_range("content", self.content, 0.0, 5.0)


def gated_stage_rewards(scores: RolloutScores, config: SdcaConfig) -> tuple[float, float, float]:
    """Return (q1, q2, q3): the stage scores with the cascaded gates applied."""
    gate_perception = 1.0 if scores.perception >= config.tau else 0.0
    gate_reasoning = 1.0 if scores.reasoning >= config.tau else 0.0
    return (
        scores.perception,
        gate_perception * scores.reasoning,
        gate_perception * gate_reasoning * scores.strategy,
    )


def reasoning_reward(scores: RolloutScores, config: SdcaConfig) -> float:
    """Return R_reas, the mean of the gated stage rewards."""
    return sum(gated_stage_rewards(scores, config)) / 3.0


def response_reward(scores: RolloutScores, config: SdcaConfig) -> float:
    """Return r_resp = w_c * content / 5 + w_a * audio_alignment."""
    return config.content_weight * scores.content / 5.0 + config.audio_weight * scores.audio_alignment


def total_reward(scores: RolloutScores, config: SdcaConfig) -> float:
    """Return R_total = w_reas * R_reas + w_resp * r_resp + w_fmt * r_fmt."""
    return (
        config.reasoning_weight * reasoning_reward(scores, config)
        + config.response_weight * response_reward(scores, config)
        + config.format_weight * scores.format
    )


def span_signals(scores: RolloutScores, config: SdcaConfig) -> dict[SpanName, float]:
    """Return the per-span reward each span's advantage is normalised from."""
    q1, q2, q3 = gated_stage_rewards(scores, config)
    response_signal = (
        config.response_span_response_weight * response_reward(scores, config)
        + config.response_span_format_weight * scores.format
    )
    return {"perception": q1, "reasoning": q2, "strategy": q3, "response": response_signal}


def span_weights(config: SdcaConfig) -> dict[SpanName, float]:
    """Return the factor each span's normalised advantage is scaled by (module docstring)."""
    shares: dict[SpanName, float] = {
        "perception": config.reasoning_weight / 3.0,
        "reasoning": config.reasoning_weight / 3.0,
        "strategy": config.reasoning_weight / 3.0,
        "response": config.response_weight + config.format_weight,
    }
    return {name: len(SPAN_NAMES) * shares[name] for name in SPAN_NAMES}


def group_normalise(
    values: torch.Tensor, std_epsilon: float = SdcaConfig.std_epsilon, valid: torch.Tensor | None = None
) -> torch.Tensor:
    """Return (x - mean) / (sample std + eps) along dim 0; zeros where all values are equal.

    With ``valid`` (a bool per row), the mean and deviation are those of the valid rows only and
    every other row is 0 (a rollout whose judge failed).
    """
    values = values.to(torch.float64)
    keep = torch.ones(values.shape[0], dtype=torch.bool) if valid is None else valid.to(torch.bool)
    normalised = torch.zeros_like(values, dtype=torch.float32)
    if int(keep.sum()) < 2:
        return normalised
    kept = values[keep]
    mean = kept.mean(dim=0, keepdim=True)
    std = kept.std(dim=0, unbiased=True, keepdim=True)
    scaled = (kept - mean) / (std + std_epsilon)
    constant = (kept.max(dim=0, keepdim=True).values - kept.min(dim=0, keepdim=True).values) == 0
    normalised[keep] = torch.where(constant, torch.zeros_like(scaled), scaled).to(torch.float32)
    return normalised


def judged(scores: Sequence[RolloutScores]) -> torch.Tensor:
    """Return a bool per rollout: True where the judge gave usable scores."""
    return torch.tensor([not rollout.judge_failed for rollout in scores], dtype=torch.bool)


def span_advantages(scores: Sequence[RolloutScores], config: SdcaConfig | None = None) -> torch.Tensor:
    """Return a G x 4 tensor of group-normalised span advantages scaled by ``span_weights``,
    columns in ``SPAN_NAMES`` order."""
    settings = config or SdcaConfig()
    signals = torch.tensor(
        [[span_signals(rollout, settings)[name] for name in SPAN_NAMES] for rollout in scores],
        dtype=torch.float64,
    )
    weights = span_weights(settings)
    scale = torch.tensor([weights[name] for name in SPAN_NAMES], dtype=torch.float32)
    return group_normalise(signals, settings.std_epsilon, judged(scores)) * scale


def total_advantages(scores: Sequence[RolloutScores], config: SdcaConfig | None = None) -> torch.Tensor:
    """Return the G group-normalised R_total values (GRPO's one advantage per rollout)."""
    settings = config or SdcaConfig()
    totals = torch.tensor([total_reward(rollout, settings) for rollout in scores], dtype=torch.float64)
    return group_normalise(totals, settings.std_epsilon, judged(scores))


def token_advantages(
    span_adv: torch.Tensor,
    total_adv: torch.Tensor,
    token_spans: Sequence[Mapping[str, tuple[int, int]]],
    completion_mask: torch.Tensor,
    mode: AdvantageMode = "sdca",
) -> torch.Tensor:
    """Return G x T per-token advantages.

    Every completion token starts with its rollout's normalised R_total (GRPO). In "sdca" mode,
    tokens inside a span instead get that span's advantage. ``token_spans[g]`` maps span names to
    ``[start, end)`` positions in the same coordinates as ``completion_mask``; positions outside
    the completion mask are always 0.
    """
    if mode not in ADVANTAGE_MODES:
        raise ValueError(f"unknown advantage mode {mode!r}")
    mask = completion_mask.to(torch.bool)
    groups = mask.shape[0]
    if (
        span_adv.shape != (groups, len(SPAN_NAMES))
        or total_adv.shape != (groups,)
        or len(token_spans) != groups
    ):
        raise ValueError(
            "span_adv must be G x 4, total_adv G and token_spans G long, G = completion_mask rows"
        )
    advantages = total_adv.to(torch.float32).unsqueeze(1).expand(mask.shape).clone()
    if mode == "sdca":
        for row, spans in enumerate(token_spans):
            for column, name in enumerate(SPAN_NAMES):
                if name in spans:
                    start, end = spans[name]
                    advantages[row, start:end] = span_adv[row, column]
    return advantages * mask
