"""Training and evaluating the reward model (appendix D.2): AdamW on shuffled mini-batches."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from ml.core.config import RewardTrainingConfig
from ml.core.loop import CancelCheck, ProgressCallback, ResumeSpec, TrainingResult, run_steps
from ml.core.precision import place_for_mixed_precision, training_compute_dtype
from ml.core.resume import training_state
from ml.core.reward.ladder import RewardExample
from ml.core.reward.model import RewardModel, reward_losses
from ml.core.reward.scoring import score_responses


def train_reward_model(
    model: RewardModel,
    examples: Sequence[RewardExample],
    config: RewardTrainingConfig,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
    resume: ResumeSpec | None = None,
) -> TrainingResult:
    """Train ``model`` in place with AdamW on shuffled mini-batches; return the per-step metrics.

    ``should_cancel()`` is polled before every step; a cancelled run keeps the updates made so far.
    With ``resume``, the run saves its state there and continues after an earlier run's
    (``ml.core.resume``).
    """
    if not examples:
        raise ValueError("reward-model training needs at least one example")
    torch.manual_seed(config.seed)
    compute_dtype = training_compute_dtype(config.dtype)
    # Every weight trains, so all are fp32 master weights; bf16 is the autocast compute dtype.
    place_for_mixed_precision(model, config.device, "float32")
    model.speech_lm.autocast_dtype = compute_dtype
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )

    def take_step(step: int, indices: list[int]) -> dict[str, float]:
        taken = [examples[index] for index in indices]
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
        return {
            "loss": float(loss.detach()),
            "content_loss": float(content_loss.detach()),
            "alignment_loss": float(alignment_loss.detach()),
            "learning_rate": config.learning_rate,
        }

    state = training_state(resume, model, optimizer)
    result = run_steps(len(examples), config.batch_size, config, take_step, on_progress, should_cancel, state)
    model.eval()
    return result


def evaluate_reward_model(
    model: RewardModel,
    examples: Sequence[RewardExample],
    batch_size: int = RewardTrainingConfig.batch_size,
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
