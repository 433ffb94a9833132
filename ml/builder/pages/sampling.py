"""The spot-check draw: a seeded random sample of a build's finished samples, stratified.

Pure (no Django). Strata are whatever the caller groups by (the build page uses prompt variant
and single/dialogue), so every kind of sample is looked at, not only the most common one; each
stratum gets its share by largest remainder, and within a stratum the choice is a seeded shuffle
of the sorted ids, so the same build, seed and size always draw the same samples in any order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence


class SamplingProblem(ValueError):
    """A spot-check size that cannot be drawn, with the reason in words."""


def sample_size(population: int, *, fraction: float | None = None, count: int | None = None) -> int:
    """Return how many to draw: `count` (at most the population) or `fraction` of it, at least one.

    A fraction rounds up, so 2% of 60 samples is 2, and any non-zero fraction of a non-empty
    build looks at one sample at least.
    """
    if (fraction is None) == (count is None):
        raise SamplingProblem("give either a fraction or a count")
    if count is not None:
        if count < 1:
            raise SamplingProblem("the count is at least 1")
        return min(count, population)
    assert fraction is not None
    if not 0.0 < fraction <= 1.0:
        raise SamplingProblem("the fraction lies in (0, 1]")
    return min(population, math.ceil(fraction * population - 1e-9))


def allocate(sizes: dict[Hashable, int], total: int) -> dict[Hashable, int]:
    """Split `total` over strata in proportion to their sizes (largest remainder, ties by key order)."""
    population = sum(sizes.values())
    if population == 0 or total == 0:
        return {stratum: 0 for stratum in sizes}
    quotas = {stratum: total * size / population for stratum, size in sizes.items()}
    shares = {stratum: math.floor(quota) for stratum, quota in quotas.items()}
    order = sorted(sizes, key=lambda stratum: (-(quotas[stratum] - shares[stratum]), str(stratum)))
    for stratum in order[: total - sum(shares.values())]:
        shares[stratum] += 1
    return shares


def draw_from_stratum(ids: Sequence[int], k: int, seed: int | str, stratum: Hashable) -> list[int]:
    """Return `k` of one stratum's ids, the same ones for the same ids, seed and stratum."""
    # random.Random with a str seed hashes it with sha512: stable across processes and versions.
    return random.Random(f"{seed}:{stratum}").sample(sorted(ids), k)
