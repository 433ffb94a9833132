import krippendorff
import numpy as np
import pytest

from webapp.lib.stats import (
    agreement_with_gold,
    fleiss_kappa,
    jaccard,
    krippendorff_alpha,
    masi,
    mean_pairwise_set_agreement,
    percent_agreement,
)

# Units x raters, None = not rated.
#   u1: 1, 2, -      -> o[1,2] = o[2,1] = 1/(2-1) = 1
#   u2: 3, 3, 3      -> 3 unordered pairs, each adding 1/(3-1) twice: o[3,3] = 3
#   u3: -, 4, 2      -> o[2,4] = o[4,2] = 1
# Marginals n_1 = 1, n_2 = 2, n_3 = 3, n_4 = 1, n = 7; alpha = 1 - (n-1) * sum(o d2) / sum(n_c n_k d2).
SPARSE: list[list[int | None]] = [[1, 2, None], [3, 3, 3], [None, 4, 2]]


def test_nominal_alpha_by_hand_two_raters():
    # o[a,a] = 2, o[a,b] = o[b,a] = 1, o[b,b] = 2; n_a = n_b = 3, n = 6.
    # alpha = 1 - 5 * 2 / (2 * 3 * 3) = 1 - 10/18 = 4/9
    table: list[list[str | None]] = [["a", "a"], ["a", "b"], ["b", "b"]]
    assert krippendorff_alpha(table) == pytest.approx(4 / 9)


def test_nominal_alpha_by_hand_with_missing_ratings():
    # disagreements sum(o) off-diagonal = 4; sum(n_c n_k) off-diagonal = 7^2 - (1 + 4 + 9 + 1) = 34
    # alpha = 1 - 6 * 4 / 34 = 10/34
    assert krippendorff_alpha(SPARSE, "nominal") == pytest.approx(10 / 34)


def test_interval_alpha_by_hand():
    # observed: 2 * o[1,2] * 1^2 + 2 * o[2,4] * 2^2 = 2 + 8 = 10
    # expected (unordered pairs): 1*2*1 + 1*3*4 + 1*1*9 + 2*3*1 + 2*1*4 + 3*1*1 = 40, ordered 80
    # alpha = 1 - 6 * 10 / 80 = 0.25
    assert krippendorff_alpha(SPARSE, "interval") == pytest.approx(0.25)


def test_ordinal_alpha_by_hand():
    # d2(c,k) = (n_c + ... + n_k - (n_c + n_k)/2)^2:
    #   (1,2) 1.5^2=2.25  (1,3) 4^2=16  (1,4) 6^2=36  (2,3) 2.5^2=6.25  (2,4) 4.5^2=20.25  (3,4) 2^2=4
    # observed: 2 * 2.25 + 2 * 20.25 = 45
    # expected unordered: 2*2.25 + 3*16 + 1*36 + 6*6.25 + 2*20.25 + 3*4 = 178.5, ordered 357
    # alpha = 1 - 6 * 45 / 357 = 87/357
    assert krippendorff_alpha(SPARSE, "ordinal") == pytest.approx(87 / 357)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_the_krippendorff_package(level):
    rng = np.random.default_rng(7)
    ratings = rng.integers(1, 6, size=(30, 4)).astype(float)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    table = [[None if np.isnan(value) else int(value) for value in unit] for unit in ratings]
    expected = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
    assert krippendorff_alpha(table, level) == pytest.approx(expected)


def test_alpha_needs_two_distinct_values():
    with pytest.raises(ValueError, match="two distinct values"):
        krippendorff_alpha([[1, 1], [1, 1], [2, None]])


def test_fleiss_kappa_wikipedia_example():
    # https://en.wikipedia.org/wiki/Fleiss%27_kappa worked example: 10 subjects, 14 raters,
    # 5 categories; P-bar = 0.378, P-bar-e = 0.213, kappa = 0.210.
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(counts) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_kappa_rejects_unequal_rater_counts():
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[2, 1], [1, 1]])


@pytest.mark.parametrize(
    ("a", "b", "expected_jaccard", "expected_masi"),
    [
        ({"x", "y"}, {"x", "y"}, 1.0, 1.0),
        ({"x"}, {"x", "y"}, 1 / 2, 1 / 2 * 2 / 3),  # subset
        ({"x", "y"}, {"y", "z"}, 1 / 3, 1 / 3 * 1 / 3),  # overlap
        ({"x"}, {"z"}, 0.0, 0.0),  # disjoint
        (set(), set(), 1.0, 1.0),
    ],
)
def test_jaccard_and_masi(a, b, expected_jaccard, expected_masi):
    assert jaccard(a, b) == pytest.approx(expected_jaccard)
    assert masi(a, b) == pytest.approx(expected_masi)


def test_mean_pairwise_set_agreement():
    items: list[list[set[str] | None]] = [
        [{"a"}, {"a"}, {"a", "b"}],  # MASI pairs 1, 1/3, 1/3 -> 5/9; Jaccard 1, 1/2, 1/2 -> 2/3
        [{"x"}, None, {"y"}],  # 0
        [{"z"}, None, None],  # one label set: skipped
    ]
    assert mean_pairwise_set_agreement(items, "masi") == pytest.approx((5 / 9 + 0) / 2)
    assert mean_pairwise_set_agreement(items, "jaccard") == pytest.approx((2 / 3 + 0) / 2)


def test_percent_agreement_averages_agreeing_pairs_per_unit():
    # unit 1: pairs (a,a) (a,b) (a,b) -> 1/3; unit 2: (c,c) -> 1; unit 3 skipped
    assert percent_agreement([["a", "a", "b"], ["c", "c", None], ["d", None, None]]) == pytest.approx(2 / 3)


def test_agreement_with_gold_per_annotator():
    gold = {1: "sad", 2: "sad", 3: "angry", 4: "fear"}
    labels = {"ann1": {1: "sad", 2: "happy", 3: "angry"}, "ann2": {4: "fear", 9: "sad"}}
    result = agreement_with_gold(labels, gold)
    assert (result["ann1"].n_items, result["ann1"].agreement) == (3, pytest.approx(2 / 3))
    assert (result["ann2"].n_items, result["ann2"].agreement) == (1, 1.0)


def test_agreement_with_gold_on_label_sets():
    gold = {1: {"validation", "reassurance"}}
    result = agreement_with_gold({"ann": {1: {"validation"}}}, gold, match=masi)
    assert result["ann"].agreement == pytest.approx(1 / 2 * 2 / 3)
