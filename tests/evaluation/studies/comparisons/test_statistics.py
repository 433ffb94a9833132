"""Comparison statistics equal reference computations: scipy's t interval, a direct maximum-likelihood
Bradley–Terry fit with scipy.optimize, and MUSHRA post-screening on hand-built panels."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from scipy import optimize, stats

from evaluation.studies.comparisons import (
    HIDDEN_REFERENCE,
    LOW_ANCHOR,
    MID_ANCHOR,
    MushraScore,
    PairVote,
    box_stats,
    bradley_terry,
    comparison_mos,
    excluded_raters,
    fit_bradley_terry,
    mushra_post_screening,
    mushra_summary,
    time_on_task,
    win_matrices,
)

SYSTEMS = ["A", "B", "C", "D"]
TRUE_STRENGTH = {"A": 0.0, "B": 0.6, "C": -0.4, "D": 1.1}


def generated_ab_votes(n_raters: int = 30, per_rater: int = 40, seed: int = 1) -> list[PairVote]:
    rng = random.Random(seed)
    votes = []
    for rater in range(n_raters):
        for n in range(per_rater):
            first, second = rng.sample(SYSTEMS, 2)
            p_second = 1 / (1 + np.exp(TRUE_STRENGTH[first] - TRUE_STRENGTH[second]))
            draw = rng.random()
            answer = 0 if draw < 0.1 else (1 if rng.random() < p_second else -1)
            votes.append(PairVote(f"r{rater}", f"item{n % 7}", first, second, answer))
    return votes


def scipy_bradley_terry(votes: list[PairVote]) -> np.ndarray:
    """The reference: minimise the negative log-likelihood directly, ties as half wins."""
    index = {system: i for i, system in enumerate(SYSTEMS)}
    wins = np.zeros((len(SYSTEMS), len(SYSTEMS)))
    for vote in votes:
        first, second = index[vote.first], index[vote.second]
        if vote.answer > 0:
            wins[second, first] += 1
        elif vote.answer < 0:
            wins[first, second] += 1
        else:
            wins[first, second] += 0.5
            wins[second, first] += 0.5

    def negative_log_likelihood(free: np.ndarray) -> float:
        theta = np.concatenate([[0.0], free])
        diff = theta[:, None] - theta[None, :]
        return float(-(wins * -np.logaddexp(0, -diff)).sum())

    fitted = optimize.minimize(negative_log_likelihood, np.zeros(len(SYSTEMS) - 1), method="BFGS", tol=1e-12)
    theta = np.concatenate([[0.0], fitted.x])
    return theta - theta.mean()


def test_bradley_terry_equals_a_direct_maximum_likelihood_fit():
    votes = generated_ab_votes()
    preference = bradley_terry(votes, SYSTEMS, n_boot=200, seed=3)
    ours = np.array([score.score for score in preference.scores])
    np.testing.assert_allclose(ours, scipy_bradley_terry(votes), atol=1e-5)
    # The fit recovers the generating order, and every interval holds its estimate.
    assert [s.system for s in sorted(preference.scores, key=lambda s: -(s.score or 0))] == [
        "D",
        "B",
        "A",
        "C",
    ]
    for score in preference.scores:
        assert score.low is not None and score.score is not None and score.high is not None
        assert score.low < score.score < score.high


def test_the_win_rate_matrix_counts_ties_as_half_wins():
    votes = [
        PairVote("r1", "i1", "A", "B", 1),  # B preferred
        PairVote("r1", "i2", "B", "A", 1),  # A preferred (heard second)
        PairVote("r2", "i1", "A", "B", 0),  # tie
        PairVote("r2", "i2", "A", "B", -1),  # A preferred (heard first)
        PairVote("r2", "i2", "A", "C", 1),  # C preferred
    ]
    preference = bradley_terry(votes, ["A", "B", "C"], n_boot=0)
    assert preference.win_rate["A"]["B"] == pytest.approx(2.5 / 4)
    assert preference.win_rate["B"]["A"] == pytest.approx(1.5 / 4)
    assert preference.win_rate["C"]["A"] == 1.0
    assert preference.win_rate["B"]["C"] is None  # never compared
    assert preference.counts["A"]["B"] == 4 and preference.n_votes == 5
    # C never lost and B never met C: no maximum-likelihood strengths exist, and the page says why.
    assert all(score.score is None for score in preference.scores)
    assert preference.notes


def test_bootstrap_resamples_whole_raters():
    votes = generated_ab_votes(n_raters=12, per_rater=30, seed=4)
    raters, per_rater, _ = win_matrices(votes, SYSTEMS)
    assert len(raters) == 12 and per_rater.sum() == len(votes)
    one = bradley_terry(votes, SYSTEMS, n_boot=300, seed=9)
    again = bradley_terry(votes, SYSTEMS, n_boot=300, seed=9)
    assert one == again  # the seed makes the intervals reproducible
    batch = fit_bradley_terry(np.stack([per_rater.sum(axis=0)] * 3))
    np.testing.assert_allclose(batch[1], [float(s.score or 0) for s in one.scores], atol=1e-9)
    assert all(s.score is not None for s in one.scores)


def test_cmos_is_sign_corrected_and_its_interval_equals_scipy():
    rng = random.Random(2)
    votes = []
    truth = {"X": 1.0, "Y": -0.5}
    for item in range(12):
        for rater in range(3):
            for system, advantage in truth.items():
                vote = max(-3, min(3, round(advantage + rng.gauss(0, 1))))
                if (item + rater) % 2:  # the reference heard second: the rater's answer is about it
                    votes.append(PairVote(f"r{rater}", f"i{item}", system, "REF", -vote))
                else:
                    votes.append(PairVote(f"r{rater}", f"i{item}", "REF", system, vote))
    cells = {cell.system: cell for cell in comparison_mos(votes, ["REF", "X", "Y"], reference="REF")}
    for system in truth:
        per_item = []
        for item in range(12):
            own = [
                v.answer if v.second == system else -v.answer
                for v in votes
                if v.item == f"i{item}" and system in (v.first, v.second)
            ]
            per_item.append(np.mean(own))
        low, high = stats.t.interval(
            0.95, len(per_item) - 1, loc=np.mean(per_item), scale=stats.sem(per_item)
        )
        cell = cells[system]
        assert cell.versus == "REF" and cell.n_items == 12 and cell.n_votes == 36
        assert cell.mean == pytest.approx(np.mean(per_item))
        assert (cell.low, cell.high) == (pytest.approx(low), pytest.approx(high))
    assert (cells["X"].low or 0) > 0 > (cells["Y"].high or 0)


def test_cmos_without_a_reference_compares_every_pair():
    votes = [
        PairVote("r1", "i1", "A", "B", 2),
        PairVote("r2", "i1", "B", "A", -1),  # B heard first and judged better: B +1 over A
        PairVote("r1", "i2", "C", "A", 3),
    ]
    cells = {(c.system, c.versus): c for c in comparison_mos(votes, ["A", "B", "C"])}
    assert set(cells) == {("B", "A"), ("C", "A"), ("C", "B")}
    assert cells[("B", "A")].mean == pytest.approx(1.5) and cells[("B", "A")].low is None
    assert cells[("C", "A")].mean == pytest.approx(-3)
    assert cells[("C", "B")].n_votes == 0 and cells[("C", "B")].mean is None


def _panel(rater: str, hidden: list[int], mid: list[int] | None = None) -> list[MushraScore]:
    rows = []
    for trial, score in enumerate(hidden):
        rows.append(MushraScore(rater, f"{rater}-t{trial}", f"i{trial}", HIDDEN_REFERENCE, score))
        rows.append(MushraScore(rater, f"{rater}-t{trial}", f"i{trial}", "A", 60))
        rows.append(MushraScore(rater, f"{rater}-t{trial}", f"i{trial}", LOW_ANCHOR, 20))
        if mid is not None:
            rows.append(MushraScore(rater, f"{rater}-t{trial}", f"i{trial}", MID_ANCHOR, mid[trial]))
    return rows


def test_mushra_post_screening_excludes_above_fifteen_percent_only():
    rows = (
        _panel("careful", [100] * 20)
        + _panel("three_low", [85, 80, 89] + [100] * 17)  # 15%: kept
        + _panel("four_low", [85, 80, 89, 10] + [100] * 16)  # 20%: excluded
        + _panel("exactly_90", [90] * 20)  # 90 is not below 90
        + _panel("anchor_loud", [100] * 10, mid=[95, 95] + [50] * 8)  # mid anchor > 90 in 20%
    )
    screens = {screen.rater: screen for screen in mushra_post_screening(rows)}
    assert not screens["careful"].excluded and not screens["three_low"].excluded
    assert not screens["exactly_90"].excluded
    assert screens["four_low"].excluded and screens["four_low"].hidden_reference_low == 4
    assert screens["four_low"].reasons == ("hidden reference below 90 in 4 of 20 trials (20% > 15%)",)
    assert screens["anchor_loud"].reasons == ("mid anchor above 90 in 2 of 10 trials (20% > 15%)",)
    summary = {
        box.condition: box for box in mushra_summary(rows, ["A", HIDDEN_REFERENCE], excluded=["four_low"])
    }
    assert summary["A"].n == 70 and summary["A"].median == 60


def test_box_stats_follow_tukey():
    scores = [10, 20, 30, 40, 50, 60, 70, 80, 90, 0, 100, 55]
    by_item = {f"i{n}": [score] for n, score in enumerate(scores)}
    box = box_stats("A", scores, by_item)
    q1, median, q3 = np.percentile(scores, [25, 50, 75])
    assert (box.q1, box.median, box.q3) == (q1, median, q3)
    assert box.whisker_low == 0 and box.whisker_high == 100 and box.outliers == 0
    low, high = stats.t.interval(0.95, len(scores) - 1, loc=np.mean(scores), scale=stats.sem(scores))
    assert (box.low, box.high) == (pytest.approx(low), pytest.approx(high))
    outlying = box_stats("B", [50, 51, 52, 53, 54, 0], {"i": [0.0]})
    assert outlying.whisker_low == 50 and outlying.outliers == 1 and outlying.low is None


def test_time_on_task_and_exclusions_with_reasons():
    times = time_on_task([("a", 10.0), ("a", 30.0), ("a", 3600.0), ("b", 5.0)])
    assert [(t.rater, t.trials, t.total_seconds, t.median_seconds) for t in times] == [
        ("a", 3, 3640.0, 30.0),
        ("b", 1, 5.0, 5.0),
    ]
    screens = mushra_post_screening(_panel("deaf", [10] * 5) + _panel("fine", [100] * 5))
    excluded = excluded_raters({"lazy": "clicked through", "other": ""}, screens)
    assert [(e.rater, e.reasons) for e in excluded] == [
        ("deaf", ("hidden reference below 90 in 5 of 5 trials (100% > 15%)",)),
        ("lazy", ("excluded by an admin: clicked through",)),
        ("other", ("excluded by an admin",)),
    ]


def test_every_pair_in_generated_data_is_compared_both_ways():
    votes = generated_ab_votes(n_raters=3, per_rater=50)
    seen = {(v.first, v.second) for v in votes}
    assert all((a, b) in seen for a, b in itertools.permutations(SYSTEMS, 2))
