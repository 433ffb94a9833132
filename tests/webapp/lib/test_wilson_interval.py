"""Wilson score intervals against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from webapp.lib.stats import Z_95, wilson_interval


def test_eight_of_ten() -> None:
    # by hand: z² = 3.8415; center = (0.8 + 3.8415/20) / (1 + 3.8415/10) = 0.89604 / 1.38415 = 0.64735;
    # half = 1.96 · sqrt(0.016 + 3.8415/400) / 1.38415 = 1.96 · 0.16001 / 1.38415 = 0.22658
    share = wilson_interval(8, 10)
    assert share.rate == 0.8
    assert share.low == pytest.approx(0.4902, abs=1e-4)
    assert share.high == pytest.approx(0.9433, abs=1e-4)


def test_none_of_five_is_not_a_point() -> None:
    # by hand: center = (3.8415/10) / (1 + 3.8415/5) = 0.38415 / 1.7683 = 0.21724 = half, so [0, 0.4345]
    share = wilson_interval(0, 5)
    assert share.low == pytest.approx(0.0, abs=1e-12)
    assert share.high == pytest.approx(0.4345, abs=1e-4)


def test_all_of_five_mirrors_none_of_five() -> None:
    share = wilson_interval(5, 5)
    assert share.low == pytest.approx(1 - 0.4345, abs=1e-4)
    assert share.high == pytest.approx(1.0)


def test_one_of_two() -> None:
    # by hand: center = 0.5; half = 1.96 · sqrt(0.125 + 3.8415/16) / (1 + 3.8415/2) = 1.96 · 0.60423 / 2.92073 = 0.40546
    share = wilson_interval(1, 2)
    assert share.low == pytest.approx(0.0946, abs=1e-4)
    assert share.high == pytest.approx(0.9054, abs=1e-4)


def test_no_trials_has_no_rate_and_no_interval() -> None:
    share = wilson_interval(0, 0)
    assert share.rate is None and share.low is None and share.high is None


def test_impossible_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(-1, 2)


def test_z_is_the_97_5th_percentile() -> None:
    assert 0.5 * math.erfc(-Z_95 / math.sqrt(2)) == pytest.approx(0.975, abs=1e-12)
