import math

import pytest

from webapp.lib.ratings import correlation_with_others_mean, is_straightlining, screen_raters


def test_straightlining_threshold_by_hand():
    assert is_straightlining([4, 4, 4, 4])
    # mean 4.1, variance (9 * 0.01 + 0.81) / 10 = 0.09 < 0.1
    assert is_straightlining([4] * 9 + [5])
    # mean 4.25, variance (3 * 0.0625 + 0.5625) / 4 = 0.1875
    assert not is_straightlining([4, 4, 4, 5])


def _rows(scores_by_rater):
    return [
        (rater, item, score) for rater, scores in scores_by_rater.items() for item, score in enumerate(scores)
    ]


def test_correlation_with_the_mean_of_the_other_raters_by_hand():
    rows = _rows({"r1": [1, 2, 3, 4], "r2": [2, 3, 4, 5], "r3": [2, 1, 4, 3]})
    # r1 vs mean(r2, r3) = 2, 2, 4, 4: deviations (-1.5, -.5, .5, 1.5) and (-1, -1, 1, 1)
    # r = 4 / sqrt(5 * 4) = 0.894427
    assert correlation_with_others_mean(rows, "r1") == pytest.approx(4 / math.sqrt(20))
    # r3 vs mean(r1, r2) = 1.5, 2.5, 3.5, 4.5: r = 3 / sqrt(5 * 5) = 0.6
    assert correlation_with_others_mean(rows, "r3") == pytest.approx(0.6)


def test_correlation_is_nan_without_enough_overlap():
    rows = [("r1", 1, 3.0), ("r2", 1, 4.0), ("r1", 2, 2.0), ("r2", 2, 5.0)]
    assert math.isnan(correlation_with_others_mean(rows, "r1"))


def test_screen_raters_flags_a_contrarian_and_a_straightliner():
    rows = _rows({"r1": [1, 2, 3, 4], "r2": [2, 3, 4, 5], "contrarian": [4, 3, 2, 1], "flat": [3, 3, 3, 3]})
    screens = {screen.rater: screen for screen in screen_raters(rows)}
    # contrarian vs mean(r1, r2, flat) = 2, 2.67, 3.33, 4 -> r = -1
    assert screens["contrarian"].correlation_with_others == pytest.approx(-1.0)
    assert screens["contrarian"].low_correlation
    assert not screens["contrarian"].straightlining
    assert screens["flat"].straightlining
    assert screens["flat"].variance == 0.0
    # flat has r = nan (constant): too little information, not a disagreement
    assert not screens["flat"].low_correlation
    assert not screens["r1"].low_correlation
    assert screens["r1"].n_ratings == 4
