"""The RL training loop: GRPO steps (``ml.core.rl.grpo``) over shuffled prompts, until done or cancelled."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch

from ml.core.config import RlConfig
from ml.core.loop import CancelCheck, ProgressCallback, ResumeSpec, TrainingResult, run_steps
from ml.core.precision import training_compute_dtype
from ml.core.resume import training_state
from ml.core.rl.grpo import rl_step
from ml.core.rl.rollouts import RlPrompt, RolloutScorer
from ml.core.runtime import (
    Ranks,
    prepare_for_training,
    seed_everything,
    sum_across_ranks,
)
from ml.core.speech.model import SpeechLM


def prepare_policy(policy: SpeechLM, reference: SpeechLM | None, config: RlConfig) -> None:
    """Apply device, dtype, gradient checkpointing and LoRA to the policy; freeze the reference."""
    prepare_for_training(policy, config)
    if reference is not None:
        reference.model.to(device=config.device, dtype=getattr(torch, config.dtype))
        reference.autocast_dtype = training_compute_dtype(config.dtype)
        reference.model.eval()
        reference.model.requires_grad_(False)


# Metrics that are counts over the step's rollouts: summed over ranks, not averaged.
_SUMMED_METRICS = frozenset({"judge_failed_rollouts"})
# Metrics that are means over the judged rollouts only (``mean_rewards``): weighted by their count.
_JUDGED_PREFIX = "reward_"


def reduce_metrics(metrics: dict[str, float], judged: int, ranks: Ranks) -> dict[str, float]:
    """Return one step's metrics over all ranks, ``judged`` being this rank's judged rollouts.

    Counts are summed; rewards are means over all ranks' judged rollouts (0 when none was, as
    ``mean_rewards`` has it); the rest are averaged over the ranks where they are defined (NaN
    where none has them): every rank has as many prompts and rollouts, so the mean of the
    ranks' means is the mean over the global step.
    """
    names = sorted(metrics)
    weights = [float(judged) if name.startswith(_JUDGED_PREFIX) else 1.0 for name in names]
    values = [metrics[name] for name in names]
    weights = [weight if math.isfinite(value) else 0.0 for weight, value in zip(weights, values, strict=True)]
    weighted = [value * weight if weight else 0.0 for value, weight in zip(values, weights, strict=True)]
    totals = sum_across_ranks(weighted + weights, ranks)
    reduced = {}
    for index, name in enumerate(names):
        total, weight = totals[index], totals[len(names) + index]
        if name in _SUMMED_METRICS:
            reduced[name] = total
        elif weight:
            reduced[name] = total / weight
        else:
            reduced[name] = 0.0 if name.startswith(_JUDGED_PREFIX) else math.nan
    return reduced


def frozen_reference(policy: SpeechLM) -> SpeechLM:
    """Return a copy of ``policy`` sharing its tokenizer and processors, with its own weights: the
    reference of full-weight RL (without LoRA there are no adapters to switch off)."""
    reference = copy.copy(policy)
    reference.model = copy.deepcopy(policy.model)
    return reference


def train_rl(
    policy: SpeechLM,
    reference: SpeechLM | None,
    prompts: Sequence[RlPrompt],
    scorer: RolloutScorer,
    config: RlConfig,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
    ranks: Ranks | None = None,
    resume: ResumeSpec | None = None,
) -> TrainingResult:
    """Run GRPO (SDCA or vanilla advantages) over the prompts; the policy is updated in place.

    Each step takes ``prompts_per_step`` prompts (reshuffled every pass). ``should_cancel()`` is
    polled before every step; a cancelled run keeps the updates made so far. With several
    ``ranks``, each passes its own equal shard of prompts; gradients are averaged before clipping
    and the metrics are reduced over the ranks (``reduce_metrics``). With ``reference=None`` the
    reference is the policy with its LoRA adapters switched off, or, when the run trains every
    weight (``config.lora`` None), a frozen copy of the starting policy. With
    ``resume``, the run saves its state there and continues after an earlier run's (``ml.core.resume``).
    """
    ranks = ranks if ranks is not None else Ranks()
    if not prompts:
        raise ValueError("RL needs at least one prompt")
    if reference is None and config.lora is None and policy.lora is None:
        reference = frozen_reference(policy)
    seed_everything(config.seed)
    prepare_policy(policy, reference, config)
    optimizer = torch.optim.AdamW(
        policy.trainable_parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )

    def take_step(step: int, taken: list[int]) -> dict[str, float]:
        chosen = [prompts[index] for index in taken]
        outcome = rl_step(policy, reference, chosen, scorer, config, optimizer, ranks)
        judged = sum(not score.judge_failed for scores in outcome.scores for score in scores)
        return reduce_metrics(outcome.metrics(), judged, ranks)

    state = training_state(resume, policy.model, optimizer)
    result = run_steps(
        len(prompts), config.prompts_per_step, config, take_step, on_progress, should_cancel, state
    )
    policy.model.eval()
    return result
