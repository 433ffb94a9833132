"""What the three training loops (SFT, reward model, RL) share: callbacks, example order, result.

Every loop runs its steps through ``run_steps``, which reports each optimizer step to
``on_progress(fraction, message, metrics)``, polls ``should_cancel()`` before every step (a
cancelled run keeps the updates made so far), and returns a ``TrainingResult``. No torch here: the
web process imports this module (through ``ml.jobs.training.register``) for the callback types.

Resuming: given a ``Resumable`` (``ml.core.resume.TrainingState`` for the torch loops), ``run_steps``
saves the run's state after every ``every_steps`` steps and at the end of every pass over the
examples, and a later run given the same state continues after its last saved step: the example
order is fast-forwarded past the steps done, and the steps' metrics come back from the state, so
``on_progress`` hears each later step once and the result equals an uninterrupted run's.
"""

from __future__ import annotations

import math
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
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


# The file a run's resumable state is kept in, inside its ``ResumeSpec.directory``.
RESUME_STATE_FILE = "training-state.pt"


@dataclass(frozen=True)
class ResumeSpec:
    """Where a run keeps its resumable state, and how often (in optimizer steps) it saves it."""

    directory: Path
    every_steps: int = 50

    def state_file(self) -> Path:
        """Return the path of the saved state (it may not exist)."""
        return self.directory / RESUME_STATE_FILE

    def saved_step(self) -> bool:
        """Return True when an earlier run left a state to resume from."""
        return self.state_file().is_file()

    def clear(self) -> None:
        """Remove the saved state and its folder (the run ended: nothing is left to resume)."""
        shutil.rmtree(self.directory, ignore_errors=True)


class Resumable(Protocol):
    """A run's saved state: what ``run_steps`` saves every few steps and restores before its first."""

    @property
    def every_steps(self) -> int: ...

    # -> (steps done, their metrics) after restoring the saved state, or None when there is none.
    def restore(self) -> tuple[int, list[dict[str, float]]] | None: ...

    def save(self, steps_done: int, history: list[dict[str, float]]) -> None: ...


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
    resume: Resumable | None = None,
) -> TrainingResult:
    """Run ``take_step`` over shuffled batches of ``per_step`` examples; return what was done.

    The run lasts ``length.max_steps`` when set, else ``length.epochs`` passes; the example order
    is drawn from its own ``random.Random(length.seed)``, so it does not depend on what else
    consumed the global RNGs. With ``resume``, it starts after the state's last saved step
    (module docstring).
    """
    steps_per_pass = math.ceil(example_count / per_step)
    total_steps = length.max_steps or length.epochs * steps_per_pass
    result = TrainingResult(total_steps=total_steps)
    batches = shuffled_batches(example_count, per_step, random.Random(length.seed))
    restored = resume.restore() if resume is not None else None
    if restored is not None:
        result.steps_completed, result.history = restored
        # The order is a pure function of the seed: replaying it puts the run where it stopped.
        for _ in range(result.steps_completed):
            next(batches)
    for step in range(result.steps_completed, total_steps):
        if should_cancel is not None and should_cancel():
            result.cancelled = True
            break
        metrics = {"step": float(step + 1), **take_step(step, next(batches))}
        result.history.append(metrics)
        result.steps_completed = step + 1
        done = step + 1
        # After the last step there is nothing to resume: the caller saves the result.
        if (
            resume is not None
            and done < total_steps
            and (done % max(1, resume.every_steps) == 0 or done % steps_per_pass == 0)
        ):
            resume.save(done, result.history)
        if on_progress is not None:
            on_progress(done / total_steps, f"step {done}/{total_steps}", dict(metrics))
    return result
