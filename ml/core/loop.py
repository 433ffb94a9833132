"""What the three training loops (SFT, reward model, RL) share: callbacks, example order, result.

Every loop reports each optimizer step to ``on_progress(fraction, message, metrics)``, polls
``should_cancel()`` before every step (a cancelled run keeps the updates made so far), and returns
a ``TrainingResult``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# (fraction done, message, the step's metrics) -> None.
ProgressCallback = Callable[[float, str, dict[str, float]], None]
# () -> True when the run should stop before its next step.
CancelCheck = Callable[[], bool]


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
