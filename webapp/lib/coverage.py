"""What an aggregate stands on, and when two aggregates may be ranked against each other (pure).

Design rule 16: every aggregate carries n of N wherever it is shown, n the rows behind it and N the
rows expected of it. The one comparability rule of every results table (the leaderboard and its
per-turn tables, Table 8, study MOS, the EchoMind board) lives here:

    A figure is ranked (best / second marks, MOS rank) only when it was measured on every row
    expected of it: each expected item answered and scored, a scorer's error on one counting as
    measured (left out of the mean and shown as excluded, as the paper aggregates over valid
    samples only). A figure measured on fewer rows is shown with its n/N, flagged "not comparable"
    (the dagger below) and never ranked, so a system that answered 3 of 9 items cannot tie for best
    with one that answered all 9.

Expected rows are the same for every system of a table (the items of the benchmark version that
any system was asked, for example), so every ranked figure stands on the same items.
"""

from __future__ import annotations

from dataclasses import dataclass

NOT_COMPARABLE_MARK = "†"
NOT_COMPARABLE_NOTE = "†: not comparable, measured on fewer items than expected (n/N): shown, never ranked."


@dataclass(frozen=True)
class Coverage:
    """The rows behind an aggregate (`n`) and the rows expected of it (`expected`, N)."""

    n: int
    expected: int

    @property
    def complete(self) -> bool:
        """Return whether every expected row is behind the figure."""
        return self.n >= self.expected

    @property
    def text(self) -> str:
        """Return "n/N", as every page, export and the client show it."""
        return f"{self.n}/{self.expected}"


def comparable(measured: int, expected: int) -> bool:
    """Return whether a figure measured on `measured` of `expected` rows may be ranked (the rule above)."""
    return measured >= expected
