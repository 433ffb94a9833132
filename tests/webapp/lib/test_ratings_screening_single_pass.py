"""The one-pass rater screening gives exactly what the per-rater form gave, on generated panels.

`correlations_with_others_mean` groups the ratings once instead of once per rater; the reference
below is the per-rater form it replaced (kept here verbatim), and the two must agree to the bit.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable, Iterable

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evaluation.studies.screening import RatingRow, screen_study_raters
from webapp.lib.ratings import correlation_with_others_mean, correlations_with_others_mean, screen_raters


def per_rater_correlation(rows: Iterable[tuple[Hashable, Hashable, float]], rater: Hashable) -> float:
    """The former `correlation_with_others_mean`: every rater re-groups every row."""
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


def panel(seed: int, integer: bool) -> list[tuple[str, str, float]]:
    """Raters of uneven diligence over items: repeats, sparse overlap, a straight-liner, a loner."""
    rng = random.Random(seed)
    rows = []
    for n in range(40):
        rater = f"r{n}"
        for item in rng.sample(range(60), rng.randint(0, 25)):
            for _ in range(rng.choice([1, 1, 1, 2])):
                score = 3.0 if n == 7 else (rng.randint(1, 5) if integer else rng.uniform(1, 5))
                rows.append((rater, f"i{item}", float(score)))
    rows.append(("loner", "i999", 4.0))
    rng.shuffle(rows)
    return rows


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize(("seed", "integer"), [(1, True), (2, False), (3, True), (4, False)])
def test_every_raters_correlation_equals_the_per_rater_form(seed, integer):
    rows = panel(seed, integer)
    raters = [*sorted({rater for rater, _, _ in rows}), "absent"]
    fast = correlations_with_others_mean(rows, raters)
    for rater in raters:
        expected = per_rater_correlation(rows, rater)
        assert same(fast[rater], expected), rater
        assert same(correlation_with_others_mean(rows, rater), expected), rater
    assert sum(not math.isnan(value) for value in fast.values()) > 20  # the comparison has substance
    screens = screen_raters(rows)
    assert [same(s.correlation_with_others, per_rater_correlation(rows, s.rater)) for s in screens] == [
        True
    ] * len(screens)


def test_a_studys_screening_counts_as_the_per_rater_form():
    rng = random.Random(9)
    rows = [
        RatingRow(
            f"r{rng.randrange(30)}",
            stimulus := f"st{rng.randrange(120)}",
            "rated" if int(stimulus[2:]) < 100 else ("gold" if int(stimulus[2:]) < 110 else "trap"),
            "sA",
            f"i{int(stimulus[2:]) % 50}",
            dimension,
            rng.randint(1, 5),
        )
        for _ in range(3000)
        for dimension in ("naturalness", "empathy")
    ]
    expectations = {f"st{n}": {"naturalness": (3, 5)} for n in range(100, 120)}
    reports = screen_study_raters(rows, expectations)
    for report in reports:
        mine = [row for row in rows if row.rater == report.rater]
        assert report.n_ratings == sum(1 for row in mine if row.kind == "rated")
        failed: dict[str, bool] = {}
        for row in mine:
            if row.kind in ("gold", "trap") and row.stimulus in expectations:
                low, high = expectations[row.stimulus].get(row.dimension, (1, 5))
                failed[row.stimulus] = failed.get(row.stimulus, False) or not low <= row.score <= high
        traps = [bad for stimulus, bad in failed.items() if int(stimulus[2:]) >= 110]
        gold = [bad for stimulus, bad in failed.items() if int(stimulus[2:]) < 110]
        assert (report.traps_checked, report.traps_failed) == (len(traps), sum(traps))
        assert (report.gold_checked, report.gold_failed) == (len(gold), sum(gold))
    assert any(report.traps_failed for report in reports) and any(report.gold_failed for report in reports)
