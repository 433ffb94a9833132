"""The RL training loop: GRPO steps (``ml.core.rl.grpo``) over shuffled prompts, until done or cancelled."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ml.core.config import RlConfig
from ml.core.loop import CancelCheck, ProgressCallback, ResumeSpec, TrainingResult, run_steps
from ml.core.resume import training_state
from ml.core.rl.grpo import rl_step
from ml.core.rl.rollouts import RlPrompt, RolloutScorer
from ml.core.runtime import prepare_for_training, seed_everything
from ml.core.speech.model import SpeechLM


def prepare_policy(policy: SpeechLM, reference: SpeechLM | None, config: RlConfig) -> None:
    """Apply device, dtype, gradient checkpointing and LoRA to the policy; freeze the reference."""
    prepare_for_training(policy, config)
    if reference is not None:
        reference.model.to(device=config.device, dtype=getattr(torch, config.dtype))
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
    resume: ResumeSpec | None = None,
) -> TrainingResult:
    """Run GRPO (SDCA or vanilla advantages) over the prompts; the policy is updated in place.

    Each step takes ``prompts_per_step`` prompts (reshuffled every pass). ``should_cancel()`` is
    polled before every step; a cancelled run keeps the updates made so far. With ``resume``, the
    run saves its state there and continues after an earlier run's (``ml.core.resume``).
    """
    if not prompts:
        raise ValueError("RL needs at least one prompt")
    seed_everything(config.seed)
    prepare_policy(policy, reference, config)
    optimizer = torch.optim.AdamW(
        policy.trainable_parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )

    def take_step(step: int, taken: list[int]) -> dict[str, float]:
        outcome = rl_step(policy, reference, [prompts[index] for index in taken], scorer, config, optimizer)
        return outcome.metrics()

    state = training_state(resume, policy.model, optimizer)
    result = run_steps(
        len(prompts), config.prompts_per_step, config, take_step, on_progress, should_cancel, state
    )
    policy.model.eval()
    return result
