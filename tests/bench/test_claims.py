"""bench/claims.py: paired intervals, their p-values and the family's Holm and Bonferroni figures."""

from __future__ import annotations

import pytest
from scipy import stats

from bench.claims import Interval, family_adjusted, interval_text, percent


def test_a_paired_interval_and_its_p_value_are_the_t_tests() -> None:
    differences = [0.1, 0.2, 0.3, 0.25, 0.15]
    interval = Interval.of(differences)
    test = stats.ttest_1samp(differences, 0.0)

    assert interval.mean == pytest.approx(0.2)
    assert interval.p_value == pytest.approx(test.pvalue, rel=5e-3)  # the interval is kept to 4 decimals
    # rebuilt from the printed mean and interval (a run that kept no per-seed values)
    printed = Interval(interval.mean, interval.low, interval.high, 5)
    assert printed.p_value == pytest.approx(test.pvalue, rel=1e-2)


def test_the_family_is_corrected_by_holm_with_bonferroni_intervals() -> None:
    family = {
        "strong": Interval(0.05, 0.04, 0.06, 12),  # p far below 0.05 / 3
        "borderline": Interval(0.035, 0.003, 0.068, 12),  # p 0.037 alone
        "null": Interval(0.0, -0.03, 0.03, 12),
    }
    adjusted = family_adjusted(family)

    assert adjusted["strong"]["claimed"] is True
    assert adjusted["borderline"]["p"] == pytest.approx(0.037, abs=0.002)
    assert adjusted["borderline"]["p_holm"] == pytest.approx(2 * adjusted["borderline"]["p"], abs=0.001)
    assert adjusted["borderline"]["claimed"] is False
    assert adjusted["null"]["p_holm"] == 1.0
    # the family's interval is wider than the single 95% one and, here, spans 0
    assert adjusted["borderline"]["family_low"] < 0.003 < 0.068 < adjusted["borderline"]["family_high"]


def test_figures_are_printed_with_a_true_minus() -> None:
    assert (
        interval_text({"mean": -0.007, "low": -0.197, "high": 0.183}) == "\u22120.007 [\u22120.197, +0.183]"
    )
    assert percent(0.906) == "+91%"
