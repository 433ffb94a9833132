"""Agreement, MOS and significance statistics for annotation and evaluation studies.

Plain functions over plain data: lists of ratings, units x raters tables (None for a missing
rating), (rater, item, score) rows. numpy/scipy do the arithmetic; the formulas are written out
so the figures can be checked by hand (the tests do exactly that).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal, TypeVar

import numpy as np
from scipy import stats as scipy_stats

Level = Literal["nominal", "ordinal", "interval"]
SetSimilarity = Literal["jaccard", "masi"]
Key = TypeVar("Key", bound=Hashable)
Label = TypeVar("Label")

# Rater screening thresholds (design: flag straightliners and raters who disagree with the panel).
STRAIGHTLINING_VARIANCE = 0.1
LOW_CORRELATION = 0.4


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
    return 1.0 - (total - 1.0) * observed / expected


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
        return np.subtract.outer(numbers, numbers) ** 2
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


# --- MOS ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeanCI:
    mean: float
    low: float
    high: float
    n: int


def mos_with_ci(ratings: Mapping[Key, Sequence[float]], confidence: float = 0.95) -> MeanCI:
    """Return the MOS over outputs with a t confidence interval; n is the number of outputs.

    Each output's ratings (typically 3 raters) are averaged first and the interval is taken over
    those per-output means: the ratings of one output are not independent, so treating all
    ratings as separate observations would make the interval too narrow.
    """
    means = np.array([np.mean(scores) for scores in ratings.values() if len(scores) > 0])
    if len(means) < 2:
        raise ValueError("a confidence interval needs at least two rated outputs")
    mean = float(means.mean())
    half_width = float(
        scipy_stats.t.ppf((1.0 + confidence) / 2.0, len(means) - 1)
        * means.std(ddof=1)
        / math.sqrt(len(means))
    )
    return MeanCI(mean=mean, low=mean - half_width, high=mean + half_width, n=len(means))


def bootstrap_mos_ci(
    rows: Iterable[tuple[Hashable, Hashable, float]],
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> MeanCI:
    """Return the mean rating with a percentile bootstrap interval that resamples raters and items.

    `rows` are (rater, item, score). Each replicate draws raters and items with replacement; a
    rating counts (times drawn rater) x (times drawn item). Resampling both captures rater
    leniency as well as item difficulty. Replicates in which no drawn rater rated a drawn item
    (possible with sparse designs) are skipped. n is the number of ratings.
    """
    table = list(rows)
    if not table:
        raise ValueError("no ratings")
    raters = sorted({rater for rater, _, _ in table}, key=str)
    items = sorted({item for _, item, _ in table}, key=str)
    rater_index = {rater: i for i, rater in enumerate(raters)}
    item_index = {item: i for i, item in enumerate(items)}
    sums = np.zeros((len(raters), len(items)))
    counts = np.zeros((len(raters), len(items)))
    for rater, item, score in table:
        sums[rater_index[rater], item_index[item]] += score
        counts[rater_index[rater], item_index[item]] += 1

    rng = np.random.default_rng(seed)
    rater_weights = rng.multinomial(len(raters), np.full(len(raters), 1.0 / len(raters)), size=n_boot)
    item_weights = rng.multinomial(len(items), np.full(len(items), 1.0 / len(items)), size=n_boot)
    numerators = np.einsum("br,ri,bi->b", rater_weights, sums, item_weights)
    denominators = np.einsum("br,ri,bi->b", rater_weights, counts, item_weights)
    replicates = numerators[denominators > 0] / denominators[denominators > 0]
    if not len(replicates):
        raise ValueError("no bootstrap replicate drew a rater together with an item they rated")
    mean = float(sums.sum() / counts.sum())
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return MeanCI(mean=mean, low=float(low), high=float(high), n=len(table))


# --- Significance -------------------------------------------------------------------------------


def holm_correction(pvalues: Sequence[float]) -> list[float]:
    """Return Holm-Bonferroni adjusted p-values, in the input order.

    Sorted ascending, the i-th (1-based) of m p-values becomes min(1, (m - i + 1) p), made
    non-decreasing by a running maximum.
    """
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class PairedTest:
    system_a: str
    system_b: str
    n_items: int
    mean_difference: float
    statistic: float
    p_value: float
    p_holm: float


def pairwise_wilcoxon_holm(scores_by_system: Mapping[str, Mapping[Key, float]]) -> list[PairedTest]:
    """Return a two-sided Wilcoxon signed-rank test for every pair of systems, Holm-corrected together.

    Each pair is compared on the items both systems have a score for. scipy's default zero
    handling ("wilcox") drops items with equal scores; a pair whose scores are all equal gets p = 1.
    mean_difference is mean(a - b) over the matched items.
    """
    tests: list[tuple[str, str, int, float, float, float]] = []
    for system_a, system_b in combinations(scores_by_system, 2):
        scores_a, scores_b = scores_by_system[system_a], scores_by_system[system_b]
        shared = [item for item in scores_a if item in scores_b]
        a = np.array([scores_a[item] for item in shared], dtype=float)
        b = np.array([scores_b[item] for item in shared], dtype=float)
        if not shared:
            raise ValueError(f"{system_a} and {system_b} share no scored item")
        if np.all(a == b):
            statistic, p_value = 0.0, 1.0
        else:
            result = scipy_stats.wilcoxon(a, b)
            statistic, p_value = float(result.statistic), float(result.pvalue)
        tests.append((system_a, system_b, len(shared), float(np.mean(a - b)), statistic, p_value))
    adjusted = holm_correction([test[5] for test in tests])
    return [PairedTest(*test, p_holm=p_holm) for test, p_holm in zip(tests, adjusted, strict=True)]


@dataclass(frozen=True)
class CorrelationCI:
    rho: float
    low: float
    high: float
    n: int


def spearman_with_bootstrap_ci(
    x: Sequence[float], y: Sequence[float], n_boot: int = 2000, seed: int = 0, confidence: float = 0.95
) -> CorrelationCI:
    """Return Spearman's rho with a percentile bootstrap interval over resampled (x, y) pairs.

    Replicates whose resample is constant in x or y (rho undefined) are skipped.
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.shape != ys.shape or len(xs) < 3:
        raise ValueError("x and y need the same length, at least 3")
    rho = float(scipy_stats.spearmanr(xs, ys).statistic)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(xs), size=(n_boot, len(xs)))
    ranks_x = scipy_stats.rankdata(xs[picks], axis=1)
    ranks_y = scipy_stats.rankdata(ys[picks], axis=1)
    ranks_x -= ranks_x.mean(axis=1, keepdims=True)
    ranks_y -= ranks_y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((ranks_x**2).sum(axis=1) * (ranks_y**2).sum(axis=1))
    valid = denominator > 0
    replicates = (ranks_x * ranks_y).sum(axis=1)[valid] / denominator[valid]
    if not len(replicates):
        raise ValueError("every bootstrap resample was constant; rho is undefined")
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return CorrelationCI(rho=rho, low=float(low), high=float(high), n=len(xs))


# --- Rater screening ----------------------------------------------------------------------------


def is_straightlining(scores: Sequence[float], threshold: float = STRAIGHTLINING_VARIANCE) -> bool:
    """Return True when a rater's scores barely vary (population variance below threshold)."""
    if len(scores) < 2:
        raise ValueError("straightlining needs at least two scores")
    return float(np.var(scores)) < threshold


def correlation_with_others_mean(rows: Iterable[tuple[Hashable, Hashable, float]], rater: Hashable) -> float:
    """Return Pearson's r between a rater's scores and the mean of the other raters on the same items.

    Only items that the rater and at least one other rater scored count. Returns nan with fewer
    than three such items or when either side is constant (r undefined).
    """
    by_item: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(lambda: defaultdict(list))
    for who, item, score in rows:
        by_item[item][who].append(score)
    own, others = [], []
    for scores in by_item.values():
        other_scores = [s for who, values in scores.items() if who != rater for s in values]
        if rater in scores and other_scores:
            own.append(float(np.mean(scores[rater])))
            others.append(float(np.mean(other_scores)))
    if len(own) < 3 or np.ptp(own) == 0 or np.ptp(others) == 0:
        return math.nan
    return float(scipy_stats.pearsonr(own, others).statistic)


@dataclass(frozen=True)
class RaterScreen:
    rater: str
    n_ratings: int
    variance: float
    straightlining: bool
    correlation_with_others: float
    low_correlation: bool


def screen_raters(
    rows: Iterable[tuple[str, Hashable, float]],
    variance_threshold: float = STRAIGHTLINING_VARIANCE,
    correlation_threshold: float = LOW_CORRELATION,
) -> list[RaterScreen]:
    """Return a screening line per rater: straightlining and weak agreement with the rest of the panel.

    low_correlation is True when r < correlation_threshold; an undefined r (nan) is not flagged,
    since it means too little overlap to judge rather than disagreement.
    """
    table = list(rows)
    by_rater: dict[str, list[float]] = defaultdict(list)
    for rater, _, score in table:
        by_rater[rater].append(score)
    screens = []
    for rater in sorted(by_rater):
        scores = by_rater[rater]
        variance = float(np.var(scores))
        correlation = correlation_with_others_mean(table, rater)
        screens.append(
            RaterScreen(
                rater=rater,
                n_ratings=len(scores),
                variance=variance,
                straightlining=len(scores) >= 2 and variance < variance_threshold,
                correlation_with_others=correlation,
                low_correlation=correlation < correlation_threshold,
            )
        )
    return screens
