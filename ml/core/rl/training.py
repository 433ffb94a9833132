"""The RL training loop: GRPO steps (``ml.core.rl.grpo``) over shuffled prompts, until done or cancelled."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import torch

from ml.core.config import RlConfig
from ml.core.loop import CancelCheck, ProgressCallback, TrainingResult, shuffled_batches
from ml.core.rl.grpo import rl_step
from ml.core.rl.rollouts import RlPrompt, RolloutScorer
from ml.core.speech.model import SpeechLM


def prepare_policy(policy: SpeechLM, reference: SpeechLM | None, config: RlConfig) -> None:
    """Apply device, dtype, gradient checkpointing and LoRA to the policy; freeze the reference."""
    dtype = getattr(torch, config.dtype)
    policy.model.to(device=config.device, dtype=dtype)
    if config.gradient_checkpointing:
        policy.enable_gradient_checkpointing()
    if config.lora is not None and policy.lora is None:
        policy.apply_lora(config.lora)
    policy.model.train()
    if reference is not None:
        reference.model.to(device=config.device, dtype=dtype)
        reference.model.eval()
        reference.model.requires_grad_(False)


def train_rl(
    policy: SpeechLM,
    reference: SpeechLM | None,
    prompts: Sequence[RlPrompt],
    scorer: RolloutScorer,
    config: RlConfig,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
) -> TrainingResult:
    """Run GRPO (SDCA or vanilla advantages) over the prompts; the policy is updated in place.

    Each step takes ``prompts_per_step`` prompts (reshuffled every pass). ``should_cancel()`` is
    polled before every step; a cancelled run keeps the updates made so far.
    """
    if not prompts:
        raise ValueError("RL needs at least one prompt")
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    order_rng = random.Random(config.seed)

    prepare_policy(policy, reference, config)
    optimizer = torch.optim.AdamW(
        policy.trainable_parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    steps_per_epoch = math.ceil(len(prompts) / config.prompts_per_step)
    total_steps = config.max_steps or config.epochs * steps_per_epoch
    result = TrainingResult(total_steps=total_steps)
    batches = shuffled_batches(len(prompts), config.prompts_per_step, order_rng)
    for step in range(total_steps):
        if should_cancel is not None and should_cancel():
            result.cancelled = True
            break
        taken = [prompts[index] for index in next(batches)]
        outcome = rl_step(policy, reference, taken, scorer, config, optimizer)
        metrics = {"step": float(step + 1), **outcome.metrics()}
        result.history.append(metrics)
        result.steps_completed = step + 1
        if on_progress is not None:
            on_progress((step + 1) / total_steps, f"step {step + 1}/{total_steps}", dict(metrics))
    policy.model.eval()
    return result
