"""The arithmetic and the tables of the server benchmarks (bench/scale.py, bench/labelstudio.py).

Pure: plain numbers in, numbers and text out, so it is tested without a server (tests/bench/).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """One request's figures over its repeats: wall-clock milliseconds and the servers' CPU."""

    median_ms: float
    p95_ms: float
    cpu_ms: float  # CPU of the serving processes per request (mean): what a busy machine inflates least
    count: int


def p95(values: Sequence[float]) -> float:
    """Return the 95th percentile (linear interpolation between the closest ranks)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = 0.95 * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def timing(times_ms: Sequence[float], cpu_ms_total: float) -> Timing:
    """Return the median and p95 of the wall times, and the CPU per request.

    CPU is a total divided out: the kernel counts it in 10 ms ticks, too coarse for one request.
    """
    return Timing(statistics.median(times_ms), p95(times_ms), cpu_ms_total / len(times_ms), len(times_ms))


def cpu_spent(before: dict[int, float], after: dict[int, float]) -> float:
    """Return the CPU seconds spent between two readings by the processes alive at both.

    A PostgreSQL backend that ends in between (a connection closed) takes its time with it, and
    one that starts in between is not counted: a small undercount, never a negative figure.
    """
    return sum(after[pid] - used for pid, used in before.items() if pid in after)


def ratio(slower: float, faster: float) -> float:
    """Return how many times `faster` fits in `slower` (inf where `faster` is 0)."""
    return slower / faster if faster else math.inf


def rows_per_second(rows: int, seconds: float) -> float:
    return rows / seconds if seconds > 0 else math.inf


def within(growth: float, limit: float) -> bool:
    """Return whether a figure grew by at most `limit` times (a shrink always passes)."""
    return growth <= limit


def size_label(size: int) -> str:
    """Return 10K, 100K, 1M for 10_000, 100_000, 1_000_000 (and the number itself otherwise)."""
    for unit, name in ((1_000_000, "M"), (1_000, "K")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{name}"
    return str(size)


def parse_sizes(text: str) -> list[int]:
    """Return the sizes of "10K,100K,1M" (or plain numbers), ascending; refuse a size out of order."""
    sizes = []
    for part in text.split(","):
        word = part.strip().upper().replace("_", "")
        factor = {"K": 1_000, "M": 1_000_000}.get(word[-1:], 1)
        number = word[:-1] if factor > 1 else word
        if not number.isdigit() or int(number) == 0:
            raise ValueError(f"not a size: {part!r}")
        sizes.append(int(number) * factor)
    if sizes != sorted(set(sizes)):
        raise ValueError("sizes must grow: " + text)
    return sizes


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Return a plain-text table: the first column left-aligned, the others right-aligned.

    Floats print with one decimal, ints with thousands separators, None as "-".
    """

    def cell(value: object) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "yes" if value else "NO"
        if isinstance(value, float):
            return "inf" if math.isinf(value) else f"{value:,.1f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    cells = [list(header), *([cell(value) for value in row] for row in rows)]
    widths = [max(len(line[column]) for line in cells) for column in range(len(header))]
    lines = []
    for line in cells:
        first, *rest = line
        lines.append(
            "  ".join([first.ljust(widths[0]), *(v.rjust(w) for v, w in zip(rest, widths[1:], strict=True))])
        )
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
