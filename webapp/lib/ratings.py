"""Statistics of numeric ratings (MOS and rubric scores): confidence intervals, paired tests,
rank correlation and rater screening.

Plain functions over plain data: lists of ratings, {system: {item: score}} maps, (rater, item,
score) rows. numpy/scipy do the arithmetic; the formulas are written out so the figures can be
checked by hand (the tests do exactly that).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import TypeVar

import numpy as np

Key = TypeVar("Key", bound=Hashable)

# Rater screening thresholds (design: flag straightliners and raters who disagree with the panel).
STRAIGHTLINING_VARIANCE = 0.1
LOW_CORRELATION = 0.4


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
    from scipy import stats as scipy_stats  # heavy: loaded by the analysis, not the web app

    means = np.array(
        [sum(scores) / len(scores) for scores in ratings.values() if len(scores) > 0], dtype=float
    )
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
    at_rater = np.fromiter((rater_index[rater] for rater, _, _ in table), dtype=np.intp, count=len(table))
    at_item = np.fromiter((item_index[item] for _, item, _ in table), dtype=np.intp, count=len(table))
    scores = np.fromiter((score for _, _, score in table), dtype=float, count=len(table))
    sums = np.zeros((len(raters), len(items)))
    counts = np.zeros((len(raters), len(items)))
    np.add.at(sums, (at_rater, at_item), scores)
    np.add.at(counts, (at_rater, at_item), 1.0)

    rater_weights, item_weights = _bootstrap_draws(len(raters), len(items), n_boot, seed)
    numerators = _weighted_totals(rater_weights, sums, item_weights)
    denominators = _weighted_totals(rater_weights, counts, item_weights)
    replicates = numerators[denominators > 0] / denominators[denominators > 0]
    if not len(replicates):
        raise ValueError("no bootstrap replicate drew a rater together with an item they rated")
    mean = float(sums.sum() / counts.sum())
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return MeanCI(mean=mean, low=float(low), high=float(high), n=len(table))


@lru_cache(maxsize=8)
def _bootstrap_draws(n_raters: int, n_items: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the replicates' (rater weights, item weights) of `bootstrap_mos_ci`.

    They depend on nothing but the counts and the seed, so the cells of one summary (same raters
    and items, same seed) share one draw instead of repeating it; the arrays are read-only.
    """
    rng = np.random.default_rng(seed)
    rater_weights = rng.multinomial(n_raters, np.full(n_raters, 1.0 / n_raters), size=n_boot)
    item_weights = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_boot)
    rater_weights.flags.writeable = False
    item_weights.flags.writeable = False
    return rater_weights, item_weights


def _weighted_totals(rater_weights: np.ndarray, table: np.ndarray, item_weights: np.ndarray) -> np.ndarray:
    """Return, per replicate b, sum over r, i of rater_weights[b, r] * table[r, i] * item_weights[b, i].

    One matrix product (BLAS) and a row sum: the three-way einsum it replaces looped in C over
    replicates x raters x items (seconds for 100,000 ratings); the figures are the same (integer
    ratings and weights add exactly in any order).
    """
    means: np.ndarray = ((rater_weights.astype(float) @ table) * item_weights).sum(axis=1)
    return means


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
    from scipy import stats as scipy_stats  # heavy: loaded by the analysis, not the web app

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
    from scipy import stats as scipy_stats  # heavy: loaded by the analysis, not the web app

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
    return correlations_with_others_mean(rows, [rater])[rater]


def correlations_with_others_mean(
    rows: Iterable[tuple[Hashable, Hashable, float]], raters: Iterable[Hashable]
) -> dict[Hashable, float]:
    """Return `correlation_with_others_mean` of each of `raters`, grouping the rows once.

    Each rater visits only the items they scored (in the rows' order, as the one-rater form does),
    so a study's screening costs the ratings times the raters per item, not the ratings times the
    raters of the study (100,000 ratings by 500 raters: seconds, not minutes).
    """
    from scipy import stats as scipy_stats  # heavy: loaded by the analysis, not the web app

    by_item: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(lambda: defaultdict(list))
    for who, item, score in rows:
        by_item[item][who].append(score)
    items_of: dict[Hashable, list[dict[Hashable, list[float]]]] = defaultdict(list)
    for scores in by_item.values():
        for who in scores:
            items_of[who].append(scores)
    correlations: dict[Hashable, float] = {}
    for rater in raters:
        own, others = [], []
        for scores in items_of.get(rater, []):
            other_scores = [s for who, values in scores.items() if who != rater for s in values]
            if other_scores:
                own.append(float(np.mean(scores[rater])))
                others.append(float(np.mean(other_scores)))
        if len(own) < 3 or np.ptp(own) == 0 or np.ptp(others) == 0:
            correlations[rater] = math.nan
        else:
            correlations[rater] = float(scipy_stats.pearsonr(own, others).statistic)
    return correlations


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
    correlations = correlations_with_others_mean(table, sorted(by_rater))
    for rater in sorted(by_rater):
        scores = by_rater[rater]
        variance = float(np.var(scores))
        correlation = correlations[rater]
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
