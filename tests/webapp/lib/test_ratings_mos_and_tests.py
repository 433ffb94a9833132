import math

import pytest

from webapp.lib.ratings import (
    bootstrap_mos_ci,
    holm_correction,
    mos_with_ci,
    pairwise_wilcoxon_holm,
    spearman_with_bootstrap_ci,
)


def test_mos_interval_is_a_t_interval_over_per_output_means():
    # per-output means 3, 4, 5, 4 -> MOS 4; s = sqrt((1 + 0 + 1 + 0) / 3) = 0.81650
    # t(0.975, df=3) = 3.18245 -> half width 3.18245 * 0.81650 / sqrt(4) = 1.29923
    ratings = {"o1": [2, 3, 4], "o2": [4, 4, 4], "o3": [5, 5, 5], "o4": [4, 3, 5]}
    result = mos_with_ci(ratings)
    assert result.n == 4
    assert result.mean == pytest.approx(4.0)
    assert result.low == pytest.approx(4.0 - 1.29923, abs=1e-5)
    assert result.high == pytest.approx(4.0 + 1.29923, abs=1e-5)


def test_mos_needs_two_outputs():
    with pytest.raises(ValueError, match="two rated outputs"):
        mos_with_ci({"o1": [4, 5, 4]})


def test_bootstrap_of_constant_ratings_has_no_width():
    rows = [(rater, item, 4.0) for rater in "abc" for item in range(5)]
    result = bootstrap_mos_ci(rows, n_boot=200, seed=1)
    assert (result.mean, result.low, result.high, result.n) == (4.0, 4.0, 4.0, 15)


def test_bootstrap_is_reproducible_and_brackets_the_mean():
    # rater c is one point more lenient on every item: resampling raters must widen the interval
    rows = [(rater, item, float(item % 3 + 2 + (rater == "c"))) for rater in "abc" for item in range(12)]
    first = bootstrap_mos_ci(rows, n_boot=500, seed=3)
    again = bootstrap_mos_ci(rows, n_boot=500, seed=3)
    assert first == again
    assert first.mean == pytest.approx(sum(score for _, _, score in rows) / len(rows))
    assert first.low < first.mean < first.high


def test_holm_on_a_known_list():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06
    assert holm_correction([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one():
    assert holm_correction([0.5, 0.6]) == [1.0, 1.0]


def test_pairwise_wilcoxon_with_holm_by_hand():
    # A - B = 1..8, all positive: W- = 0, exact two-sided p = 2 / 2^8 = 0.0078125
    # A - C = 1.1, 2.2, ..., 7.7, -8.8: the negative has rank 8, W- = 8; subsets of 1..8 summing
    #   to <= 8 number 1+1+1+2+2+3+4+5+6 = 25, so p = 2 * 25 / 256 = 0.1953125
    # B - C = 0.1, ..., 0.7, -16.8: again W- = 8, p = 0.1953125
    # Holm over 3: 0.0078125*3 = 0.0234375; 0.1953125*2 = 0.390625; 0.1953125*1 -> 0.390625
    a = {f"item{i}": 20.0 for i in range(8)}
    b = {f"item{i}": 20.0 - (i + 1) for i in range(8)}
    c = {f"item{i}": 20.0 - 1.1 * (i + 1) * (-1 if i == 7 else 1) for i in range(8)}
    a["only-in-a"] = 3.0
    tests = {(t.system_a, t.system_b): t for t in pairwise_wilcoxon_holm({"A": a, "B": b, "C": c})}
    assert tests[("A", "B")].n_items == 8
    assert tests[("A", "B")].statistic == 0.0
    assert tests[("A", "B")].mean_difference == pytest.approx(4.5)
    assert [tests[pair].p_value for pair in [("A", "B"), ("A", "C"), ("B", "C")]] == pytest.approx(
        [0.0078125, 0.1953125, 0.1953125]
    )
    assert [tests[pair].p_holm for pair in [("A", "B"), ("A", "C"), ("B", "C")]] == pytest.approx(
        [0.0234375, 0.390625, 0.390625]
    )


def test_identical_systems_get_p_one():
    scores = {i: float(i) for i in range(6)}
    (test,) = pairwise_wilcoxon_holm({"A": scores, "B": dict(scores)})
    assert (test.p_value, test.p_holm) == (1.0, 1.0)


def test_spearman_by_hand():
    # ranks differ by d = -1, 1, -1, 1, 0: rho = 1 - 6 * 4 / (5 * 24) = 0.8
    result = spearman_with_bootstrap_ci([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], n_boot=300, seed=0)
    assert result.rho == pytest.approx(0.8)
    assert -1.0 <= result.low <= result.high <= 1.0
    assert result.n == 5


def test_spearman_of_a_monotone_relation_is_one_in_every_resample():
    result = spearman_with_bootstrap_ci([1, 2, 3, 4, 5, 6], [1, 4, 9, 16, 25, 36], n_boot=200, seed=0)
    assert (result.rho, result.low, result.high) == (
        pytest.approx(1.0),
        pytest.approx(1.0),
        pytest.approx(1.0),
    )
    assert not math.isnan(result.low)
