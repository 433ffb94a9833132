"""Study figures and rater screening on a hand-made set of ratings."""

from __future__ import annotations

import csv
import io
import math

import pytest

from evaluation.studies.results import (
    summarise_ratings,
    summary_csv,
)
from evaluation.studies.screening import RatingRow, ScreeningRules, failed_checks, screen_study_raters

# Per-output naturalness on which r1, r2 and r3 agree exactly: system A answers items i1-i3 with
# 5, 5, 4 and system B with 4, 3, 1. r4 says 3 to everything; "contra" mirrors the panel (6 - s).
PANEL = {("A", "i1"): 5, ("A", "i2"): 5, ("A", "i3"): 4, ("B", "i1"): 4, ("B", "i2"): 3, ("B", "i3"): 1}
T_975_DF2 = 4.302653


def _rated(rater: str, score_of) -> list[RatingRow]:
    return [
        RatingRow(rater, f"{system}-{item}", "rated", system, item, "naturalness", score_of(score))
        for (system, item), score in PANEL.items()
    ]


def _rows(*extra_raters: str) -> list[RatingRow]:
    rows = [row for rater in ("r1", "r2", "r3") for row in _rated(rater, lambda s: s)]
    if "r4" in extra_raters:
        rows += _rated("r4", lambda s: 3)
    if "contra" in extra_raters:
        rows += _rated("contra", lambda s: 6 - s)
    return rows


def _checks(rater: str, gold_score: int, trap_score: int) -> list[RatingRow]:
    return [
        RatingRow(rater, "gold-1", "gold", "A", "g1", "naturalness", gold_score),
        RatingRow(rater, "trap-1", "trap", "", "i2", "naturalness", trap_score),
        RatingRow(rater, "train-1", "training", "B", "t1", "naturalness", 1),
    ]


EXPECT = {"gold-1": {"naturalness": (4, 5)}, "trap-1": {"naturalness": (2, 2)}}


def test_mos_and_t_interval_over_per_output_means_by_hand():
    summary = summarise_ratings(_rows("r4"), ["A", "B"], ["naturalness"], excluded_raters=["r4"], n_boot=200)
    a, b = summary.cell("A", "naturalness"), summary.cell("B", "naturalness")
    assert a.mean is not None and a.high is not None and b.mean is not None and b.low is not None
    assert a.bootstrap_low is not None and a.bootstrap_high is not None
    # A: means 5, 5, 4 -> 4.6667, s = sqrt(1/3), half width 4.302653 * s / sqrt(3) = 1.43422
    assert a.mean == pytest.approx(14 / 3)
    assert a.high - a.mean == pytest.approx(T_975_DF2 * math.sqrt(1 / 3) / math.sqrt(3), abs=1e-5)
    # B: means 4, 3, 1 -> 2.6667, s^2 = (16/9 + 1/9 + 25/9) / 2 = 7/3
    assert b.mean == pytest.approx(8 / 3)
    assert b.mean - b.low == pytest.approx(T_975_DF2 * math.sqrt(7 / 3) / math.sqrt(3), abs=1e-5)
    assert (a.n_outputs, a.n_ratings, a.rank, b.rank) == (3, 9, 1, 2)
    assert a.bootstrap_low <= a.mean <= a.bootstrap_high
    assert summary.raters_excluded == ("r4",)
    assert summary.n_ratings == 18


def test_excluded_raters_leave_every_figure_and_included_ones_count():
    summary = summarise_ratings(_rows("r4"), ["A", "B"], ["naturalness"], n_boot=200)
    # with r4's 3s: A's outputs average 4.5, 4.5, 3.75 -> 4.25 over 12 ratings
    cell = summary.cell("A", "naturalness")
    assert cell.mean == pytest.approx(4.25)
    assert cell.n_ratings == 12
    assert summary.raters_included == ("r1", "r2", "r3", "r4")


def test_wilcoxon_on_matched_items_and_alpha_by_hand():
    summary = summarise_ratings(_rows(), ["A", "B"], ["naturalness"], n_boot=200)
    (comparison,) = summary.comparisons
    # item differences 1, 2, 3 all favour A: W- = 0, exact two-sided p = 2 / 2^3 = 0.25
    assert (comparison.test.system_a, comparison.test.system_b, comparison.test.n_items) == ("A", "B", 3)
    assert comparison.test.mean_difference == pytest.approx(2.0)
    assert comparison.test.p_value == pytest.approx(0.25)
    assert comparison.test.p_holm == pytest.approx(0.25)
    (agreement,) = summary.agreement
    # identical raters: no observed disagreement, alpha = 1, over 6 outputs x 3 ratings
    assert (agreement.alpha, agreement.n_outputs, agreement.n_ratings) == (1.0, 6, 18)


def test_alpha_of_two_raters_who_always_swap_two_scores_is_minus_a_half():
    rows = [
        RatingRow("r1", "o1", "rated", "A", "i1", "prosody", 1),
        RatingRow("r2", "o1", "rated", "A", "i1", "prosody", 2),
        RatingRow("r1", "o2", "rated", "A", "i2", "prosody", 2),
        RatingRow("r2", "o2", "rated", "A", "i2", "prosody", 1),
    ]
    # o12 = o21 = 2, n1 = n2 = 2, ordinal d2(1, 2) = (1 + 1)^2 = 4:
    # alpha = 1 - (4 - 1) * (4 * 4) / (2 * 2 * 2 * 4) = -0.5
    (agreement,) = summarise_ratings(rows, ["A"], ["prosody"], n_boot=50).agreement
    assert agreement.alpha == pytest.approx(-0.5)


def test_gold_trap_and_training_ratings_never_enter_the_figures():
    rows = _rows() + _checks("r1", gold_score=1, trap_score=5)
    summary = summarise_ratings(rows, ["A", "B"], ["naturalness"], n_boot=200)
    assert summary.cell("A", "naturalness").mean == pytest.approx(14 / 3)
    assert summary.n_ratings == 18


def test_a_system_with_one_output_gets_a_mean_but_no_interval():
    rows = [RatingRow("r1", "o1", "rated", "A", "i1", "naturalness", 4)]
    cell = summarise_ratings(rows, ["A", "B"], ["naturalness"], n_boot=50).cell("A", "naturalness")
    assert (cell.mean, cell.low, cell.n_outputs, cell.n_ratings) == (4.0, None, 1, 1)
    empty = summarise_ratings(rows, ["A", "B"], ["naturalness"], n_boot=50).cell("B", "naturalness")
    assert (empty.mean, empty.n_ratings, empty.rank) == (None, 0, None)


def test_failed_checks_read_the_expected_ranges():
    rows = _checks("r1", gold_score=4, trap_score=2) + _checks("r2", gold_score=3, trap_score=2)
    assert failed_checks(rows, EXPECT) == {
        ("r1", "gold-1"): False,
        ("r1", "trap-1"): False,
        ("r2", "gold-1"): True,
        ("r2", "trap-1"): False,
    }


def test_screening_names_failed_checks_and_straight_lining():
    rows = _rows("r4") + _checks("r4", gold_score=2, trap_score=3) + _checks("r1", gold_score=5, trap_score=2)
    reports = {report.rater: report for report in screen_study_raters(rows, EXPECT)}
    r4 = reports["r4"]
    assert r4.reasons == (
        "failed 1 of 1 trapping items",
        "failed 1 of 1 gold items",
        "straight-lining on Naturalness: variance 0.00 < 0.1 over 6 ratings",
    )
    assert (r4.n_ratings, r4.gold_checked, r4.traps_failed) == (6, 1, 1)
    # a constant rater has no defined correlation: not counted as disagreement
    assert math.isnan(r4.by_dimension["naturalness"].correlation_with_others)
    assert not reports["r1"].flagged and reports["r4"].flagged


def test_screening_tolerates_the_allowed_number_of_failed_checks():
    rows = _rows() + _checks("r1", gold_score=2, trap_score=3)
    (r1,) = [
        r
        for r in screen_study_raters(rows, EXPECT, ScreeningRules(allowed_check_failures=2))
        if r.rater == "r1"
    ]
    assert r1.reasons == ()
    assert r1.gold_failed == 1


def test_screening_flags_a_rater_who_contradicts_the_panel():
    reports = {report.rater: report for report in screen_study_raters(_rows("contra"), {})}
    # contra's scores are 6 minus the panel's, whose mean is the panel's own scores: r = -1
    assert reports["contra"].by_dimension["naturalness"].correlation_with_others == pytest.approx(-1.0)
    assert reports["contra"].reasons == (
        "low agreement on Naturalness: r = -1.00 < 0.4 with the other raters' mean",
    )


def test_csv_holds_every_figure_with_its_n():
    summary = summarise_ratings(_rows(), ["A", "B"], ["naturalness"], n_boot=200)
    table = list(csv.DictReader(io.StringIO(summary_csv(summary))))
    assert [row["figure"] for row in table] == ["mos", "mos", "wilcoxon", "krippendorff_alpha_ordinal"]
    assert table[0]["system"] == "A" and table[0]["estimate"] == "4.6667" and table[0]["n_ratings"] == "9"
    assert table[2]["p_holm"] == "0.2500" and table[2]["n_items"] == "3"
    assert table[3]["estimate"] == "1.0000" and table[3]["n_outputs"] == "6"
