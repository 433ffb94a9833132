"""Agreement statistics for annotation: Krippendorff's alpha, Fleiss' kappa, set agreement, gold.

(MOS, significance tests and rater screening are in `webapp.lib.ratings`.) Plain functions over
plain data: units x raters tables (None for a missing rating), label sets. numpy/scipy do the arithmetic; the formulas are written out
so the figures can be checked by hand (the tests do exactly that).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal, TypeVar

import numpy as np

Level = Literal["nominal", "ordinal", "interval"]
SetSimilarity = Literal["jaccard", "masi"]
Key = TypeVar("Key", bound=Hashable)
Label = TypeVar("Label")


# --- Krippendorff's alpha -----------------------------------------------------------------------


def krippendorff_alpha(data: Sequence[Sequence[Hashable | None]], level: Level = "nominal") -> float:
    """Return Krippendorff's alpha for a units x raters table (None = not rated).

    Built from the coincidence matrix: every unit with m >= 2 ratings adds 1/(m-1) to o[c][k] for
    each ordered pair of its ratings (c, k) from different raters. With n_c the row sums of o and
    n their total, alpha = 1 - (n - 1) * sum(o[c][k] * d2(c, k)) / sum(n_c * n_k * d2(c, k)).
    d2 is 0/1 (nominal), (c - k)^2 (interval), or for ordinal values
    (sum of n_g for c <= g <= k - (n_c + n_k) / 2)^2. Units with fewer than two ratings are ignored.
    """
    pairable = [[value for value in unit if value is not None] for unit in data]
    pairable = [unit for unit in pairable if len(unit) >= 2]
    values = sorted({value for unit in pairable for value in unit}, key=_sort_key)
    if len(values) < 2:
        raise ValueError("alpha needs at least two distinct values among units rated twice or more")
    index = {value: i for i, value in enumerate(values)}

    coincidences = np.zeros((len(values), len(values)))
    for unit in pairable:
        weight = 1.0 / (len(unit) - 1)
        for a, b in combinations(unit, 2):
            coincidences[index[a], index[b]] += weight
            coincidences[index[b], index[a]] += weight
    marginals = coincidences.sum(axis=1)
    total = marginals.sum()

    delta2 = _distance_matrix(values, marginals, level)
    observed = float((coincidences * delta2).sum())
    expected = float((np.outer(marginals, marginals) * delta2).sum())
    return float(1.0 - (total - 1.0) * observed / expected)


def _sort_key(value: Hashable) -> tuple[int, float | str]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value))
    return (1, str(value))


def _distance_matrix(values: Sequence[Hashable], marginals: np.ndarray, level: Level) -> np.ndarray:
    size = len(values)
    if level == "nominal":
        return 1.0 - np.eye(size)
    if level == "interval":
        numbers = np.array([_as_number(value) for value in values])
        squared: np.ndarray = np.subtract.outer(numbers, numbers) ** 2
        return squared
    if level == "ordinal":
        for value in values:
            _as_number(value)
        cumulative = np.concatenate([[0.0], np.cumsum(marginals)])
        delta2 = np.zeros((size, size))
        for c in range(size):
            for k in range(c, size):
                between = cumulative[k + 1] - cumulative[c] - (marginals[c] + marginals[k]) / 2.0
                delta2[c, k] = delta2[k, c] = between**2
        return delta2
    raise ValueError(f"unknown level {level!r}; expected nominal, ordinal or interval")


def _as_number(value: Hashable) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"ordinal and interval alpha need numeric ratings, got {value!r}")
    return float(value)


# --- Category and set agreement -----------------------------------------------------------------


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Return Fleiss' kappa from a subjects x categories table of rating counts.

    Every subject must have the same number of ratings r. P_i = (sum_j n_ij^2 - r) / (r (r - 1)),
    p_j = column share of all ratings, kappa = (mean P_i - sum p_j^2) / (1 - sum p_j^2).
    """
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0:
        raise ValueError("counts must be a non-empty subjects x categories table")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("every subject needs the same number (>= 2) of ratings")
    r = raters[0]
    per_subject = ((table**2).sum(axis=1) - r) / (r * (r - 1))
    shares = table.sum(axis=0) / table.sum()
    chance = float((shares**2).sum())
    if chance == 1.0:
        raise ValueError("kappa is undefined when every rating falls in one category")
    return (float(per_subject.mean()) - chance) / (1.0 - chance)


def jaccard(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    """Return |A & B| / |A | B|; two empty sets agree fully (1.0)."""
    set_a, set_b = set(a), set(b)
    if not set_a and not set_b:
        return 1.0
    return len(set_a & set_b) / len(set_a | set_b)


def masi(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    """Return MASI similarity (Passonneau 2006): Jaccard times a monotonicity weight.

    The weight is 1 for identical sets, 2/3 when one set contains the other, 1/3 when they overlap
    otherwise, 0 when disjoint (NLTK's masi_distance is 1 minus this, with weights 0.67 and 0.33).
    """
    set_a, set_b = set(a), set(b)
    if set_a == set_b:
        return 1.0
    if set_a <= set_b or set_b <= set_a:
        weight = 2.0 / 3.0
    elif set_a & set_b:
        weight = 1.0 / 3.0
    else:
        return 0.0
    return jaccard(set_a, set_b) * weight


def mean_pairwise_set_agreement(
    label_sets: Sequence[Sequence[Iterable[Hashable] | None]], similarity: SetSimilarity = "masi"
) -> float:
    """Return the mean over items of the mean similarity of every pair of annotators' label sets.

    `label_sets` is items x annotators (None = not annotated); items with fewer than two label sets
    are skipped. Items weigh equally, however many annotators they have.
    """
    measure = masi if similarity == "masi" else jaccard
    per_item = []
    for item in label_sets:
        sets = [set(labels) for labels in item if labels is not None]
        if len(sets) >= 2:
            per_item.append(np.mean([measure(a, b) for a, b in combinations(sets, 2)]))
    if not per_item:
        raise ValueError("no item has two or more label sets")
    return float(np.mean(per_item))


def percent_agreement(data: Sequence[Sequence[Hashable | None]]) -> float:
    """Return the mean over units of the share of rater pairs that gave the same rating.

    Units with fewer than two ratings are skipped. With two raters this is the plain share of
    units rated alike; with more it is Fleiss' P-bar.
    """
    per_unit = []
    for unit in data:
        ratings = [value for value in unit if value is not None]
        if len(ratings) >= 2:
            per_unit.append(np.mean([a == b for a, b in combinations(ratings, 2)]))
    if not per_unit:
        raise ValueError("no unit has two or more ratings")
    return float(np.mean(per_unit))


@dataclass(frozen=True)
class GoldAgreement:
    n_items: int
    agreement: float


def agreement_with_gold(
    labels_by_annotator: Mapping[str, Mapping[Key, Label]],
    gold: Mapping[Key, Label],
    match: Callable[[Label, Label], float] | None = None,
) -> dict[str, GoldAgreement]:
    """Return each annotator's mean agreement with the gold label on the items both have.

    `match(label, gold_label)` scores one item in [0, 1]; equality by default. Pass `masi` or
    `jaccard` for multi-label fields. Annotators sharing no item with gold get agreement nan.
    """
    score: Callable[[Label, Label], float] = match or (lambda label, reference: float(label == reference))
    result = {}
    for annotator, labels in labels_by_annotator.items():
        shared = [item for item in labels if item in gold]
        values = [score(labels[item], gold[item]) for item in shared]
        result[annotator] = GoldAgreement(
            n_items=len(shared), agreement=float(np.mean(values)) if values else math.nan
        )
    return result


# --- Proportions ----------------------------------------------------------------------------------

Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile


@dataclass(frozen=True)
class Proportion:
    """A share of successes with its Wilson score interval (None bounds when there were no trials)."""

    successes: int
    trials: int
    low: float | None
    high: float | None

    @property
    def rate(self) -> float | None:
        """Return successes / trials, or None without trials."""
        return self.successes / self.trials if self.trials else None


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> Proportion:
    """Return the share with its Wilson score interval (95% by default).

    Unlike the normal approximation p ± z·sqrt(p(1-p)/n), Wilson's interval stays inside [0, 1]
    and does not collapse to a point at 0 or n successes, which matters for spot-checks of a
    few dozen samples: center = (p + z²/2n) / (1 + z²/n), half = z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n).
    """
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return Proportion(0, 0, None, None)
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    center = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return Proportion(successes, trials, max(0.0, center - half), min(1.0, center + half))


# --- Means ----------------------------------------------------------------------------------------

# Student's t 97.5th percentiles for few degrees of freedom; from 10 on, Cornish-Fisher's expansion
# around Z_95 (within 1e-5 of scipy's t.ppf, so no page loads scipy for an interval).
T_95_BY_DF = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def t_95(df: int) -> float:
    """Return Student's t 97.5th percentile with `df` degrees of freedom (df >= 1)."""
    if df in T_95_BY_DF:
        return T_95_BY_DF[df]
    z = Z_95
    terms = (
        (z**3 + z) / 4,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
    )
    return float(z + sum(term / df**power for power, term in enumerate(terms, start=1)))


def mean_t_interval(values: Sequence[float]) -> tuple[float, float | None, float | None]:
    """Return the mean of `values` with its 95% t interval (None bounds for a single value);
    the one interval of a mean of per-output figures or of paired differences."""
    n = len(values)
    if not n:
        raise ValueError("a mean needs at least one value")
    mean = sum(values) / n
    if n < 2:
        return mean, None, None
    sd = math.sqrt(sum((value - mean) ** 2 for value in values) / (n - 1))
    half = t_95(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half
