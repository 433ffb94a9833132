"""Where a person stands in a queue they work through: "12 of 40" (workbench, review, rubric pages)."""

from __future__ import annotations

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
