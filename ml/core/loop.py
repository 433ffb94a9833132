"""What the three training loops (SFT, reward model, RL) share: callbacks, example order, result.

Every loop runs its steps through ``run_steps``, which reports each optimizer step to
``on_progress(fraction, message, metrics)``, polls ``should_cancel()`` before every step (a
cancelled run keeps the updates made so far), and returns a ``TrainingResult``. No torch here: the
web process imports this module (through ``ml.jobs.training.register``) for the callback types.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

# (fraction done, message, the step's metrics) -> None.
ProgressCallback = Callable[[float, str, dict[str, float]], None]
# () -> True when the run should stop before its next step.
CancelCheck = Callable[[], bool]
# (step index from 0, the step's example indices) -> the step's metrics; runs one optimizer step.
StepFunction = Callable[[int, list[int]], dict[str, float]]


class RunLength(Protocol):
    """How long a run lasts and how its examples are ordered (every training config has these)."""

    @property
    def epochs(self) -> int: ...

    # When set, the run stops after this many steps, whatever ``epochs`` says.
    @property
    def max_steps(self) -> int | None: ...

    @property
    def seed(self) -> int: ...


@dataclass
class TrainingResult:
    """What a training loop did: one metrics entry per optimizer step (``step`` plus the loop's own
    metrics), how many steps ran out of how many planned, and whether it was cancelled."""

    history: list[dict[str, float]] = field(default_factory=list)
    steps_completed: int = 0
    total_steps: int = 0
    cancelled: bool = False

    def last_metrics(self) -> dict[str, float]:
        """Return the last step's metrics ({} before any step)."""
        return dict(self.history[-1]) if self.history else {}


def shuffled_batches(count: int, per_step: int, rng: random.Random) -> Iterator[list[int]]:
    """Yield example indices per step, reshuffled every pass; a pass's last step may be smaller."""
    while True:
        order = list(range(count))
        rng.shuffle(order)
        for start in range(0, count, per_step):
            yield order[start : start + per_step]


def run_steps(
    example_count: int,
    per_step: int,
    length: RunLength,
    take_step: StepFunction,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
) -> TrainingResult:
    """Run ``take_step`` over shuffled batches of ``per_step`` examples; return what was done.

    The run lasts ``length.max_steps`` when set, else ``length.epochs`` passes; the example order
    is drawn from its own ``random.Random(length.seed)``, so it does not depend on what else
    consumed the global RNGs.
    """
    total_steps = length.max_steps or length.epochs * math.ceil(example_count / per_step)
    result = TrainingResult(total_steps=total_steps)
    batches = shuffled_batches(example_count, per_step, random.Random(length.seed))
    for step in range(total_steps):
        if should_cancel is not None and should_cancel():
            result.cancelled = True
            break
        metrics = {"step": float(step + 1), **take_step(step, next(batches))}
        result.history.append(metrics)
        result.steps_completed = step + 1
        if on_progress is not None:
            on_progress((step + 1) / total_steps, f"step {step + 1}/{total_steps}", dict(metrics))
    return result
