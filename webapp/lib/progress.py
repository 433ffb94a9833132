"""Where a person stands in a queue they work through: "12 of 40" (workbench, review, rubric pages),
and how fast a job gets through its pieces ("240 per minute, about 3 min left": judge runs)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class QueueProgress:
    done: int  # finished already
    total: int  # finished plus still to do

    @property
    def position(self) -> int:
        """The number of the piece of work in hand: the one after those done (never past the end)."""
        return min(self.done + 1, self.total) if self.total else 0

    def __str__(self) -> str:
        return f"{self.position} of {self.total}"


class Pace:
    """How fast a long job gets through its pieces and when it will end: "240 per minute, about 3 min left".

    Measured from the job's start to now (a judge run's pieces are alike, so the average is the
    honest forecast). `total` may shrink while the job runs (pieces found to need no work).
    """

    def __init__(self, total: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self._clock = clock
        self._started = clock()

    def per_minute(self, done: int) -> float | None:
        """Pieces per minute so far; None before any piece or any time has passed."""
        elapsed = self._clock() - self._started
        if done <= 0 or elapsed <= 0:
            return None
        return done * 60.0 / elapsed

    def seconds_left(self, done: int) -> float | None:
        rate = self.per_minute(done)
        if rate is None:
            return None
        return max(0, self.total - done) * 60.0 / rate

    def summary(self, done: int) -> str:
        rate, left = self.per_minute(done), self.seconds_left(done)
        if rate is None or left is None:
            return "measuring the pace"
        return f"{rate:,.0f} per minute, {_duration(left)} left"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return "under a minute"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60} min"
