"""Example order for every training loop (SFT, reward model, RL)."""

from __future__ import annotations

import random
from collections.abc import Iterator


def shuffled_batches(count: int, per_step: int, rng: random.Random) -> Iterator[list[int]]:
    """Yield example indices per step, reshuffled every pass; a pass's last step may be smaller."""
    while True:
        order = list(range(count))
        rng.shuffle(order)
        for start in range(0, count, per_step):
            yield order[start : start + per_step]
