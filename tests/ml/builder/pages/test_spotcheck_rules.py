"""Which stage a spot-check blames, acceptance per stage, and what a tightened filter redoes (pure)."""

from __future__ import annotations

import pytest

from ml.builder.pages.rules import (
    THRESHOLD_STAGES,
    CheckedSample,
    DecisionProblem,
    acceptance_by_stage,
    affected_samples,
    blamed_stage,
    overall_acceptance,
    tightening_problem,
)
from ml.builder.stages import SAMPLE_STAGES, stages_from


def test_emotion_not_audible_blames_the_consistency_check() -> None:
    assert blamed_stage("drop", ["audio_wrong_emotion"]) == "consistency"


def test_ungrounded_reasoning_blames_the_reasoning_filter() -> None:
    assert blamed_stage("fix", ["reasoning_ungrounded"]) == "response_filter"


def test_several_reasons_blame_the_earliest_stage_that_let_a_problem_through() -> None:
    assert blamed_stage("drop", ["style_mismatch", "perception_wrong", "strategy_wrong"]) == "perception"


def test_the_annotators_choice_of_stage_wins() -> None:
    assert blamed_stage("drop", ["perception_wrong"], "user_audio") == "user_audio"


def test_other_needs_a_stage() -> None:
    with pytest.raises(DecisionProblem, match="which stage"):
        blamed_stage("drop", ["other"])
    assert blamed_stage("drop", ["other"], "queries") == "queries"


@pytest.mark.parametrize(
    ("verdict", "reasons", "stage", "message"),
    [
        ("drop", [], "", "at least one reason"),
        ("fix", [], "", "at least one reason"),
        ("keep", ["style_mismatch"], "", "needs no reasons"),
        ("drop", ["no_such_reason"], "", "unknown reason"),
        ("drop", ["other"], "plan", "not a stage"),
        ("maybe", ["other"], "queries", "keep, fix or drop"),
    ],
)
def test_bad_decisions_are_refused(verdict: str, reasons: list[str], stage: str, message: str) -> None:
    with pytest.raises(DecisionProblem, match=message):
        blamed_stage(verdict, reasons, stage)


def test_a_keep_blames_no_stage() -> None:
    assert blamed_stage("keep", []) == ""


def test_acceptance_per_stage_counts_fixes_and_drops_against_the_blamed_stage_only() -> None:
    # given 10 checks: 6 kept, 2 dropped for consistency, 1 fixed for the response filter, 1 dropped for it;
    # two of the ten are dialogue turns
    checks = [CheckedSample("keep", "", False)] * 5 + [CheckedSample("keep", "", True)]
    checks += [CheckedSample("drop", "consistency", False)] * 2
    checks += [CheckedSample("fix", "response_filter", True), CheckedSample("drop", "response_filter", False)]

    rows = {row.stage: row for row in acceptance_by_stage(checks)}

    assert list(rows) == list(SAMPLE_STAGES)
    assert (rows["consistency"].accepted.successes, rows["consistency"].accepted.trials) == (8, 10)
    assert rows["consistency"].accepted.low == pytest.approx(0.4902, abs=1e-4)  # Wilson, by hand
    assert rows["consistency"].accepted.high == pytest.approx(0.9433, abs=1e-4)
    assert (rows["response_filter"].blamed_fix, rows["response_filter"].blamed_drop) == (1, 1)
    assert (rows["response_filter"].accepted.successes, rows["response_filter"].accepted.trials) == (8, 10)
    assert (rows["perception"].accepted.successes, rows["perception"].accepted.trials) == (10, 10)
    # only the two dialogue turns went through trajectory planning, and neither was blamed on it
    assert (rows["trajectories"].accepted.successes, rows["trajectories"].accepted.trials) == (2, 2)


def test_overall_acceptance_is_the_share_kept_as_it_was() -> None:
    checks = [CheckedSample("keep", "", False)] * 3 + [CheckedSample("fix", "perception", False)]
    share = overall_acceptance(checks)
    assert (share.successes, share.trials) == (3, 4)


def test_no_checks_no_rates() -> None:
    assert all(row.accepted.rate is None for row in acceptance_by_stage([]))


def test_tightening_must_be_stricter_and_in_range() -> None:
    assert tightening_problem("consistency_min_confidence", 0.5, 0.7) is None
    assert "tighter" in str(tightening_problem("consistency_min_confidence", 0.5, 0.5))
    assert "tighter" in str(tightening_problem("query_min_score", 3, 2))
    assert "between" in str(tightening_problem("consistency_min_confidence", 0.5, 1.5))
    assert "whole numbers" in str(tightening_problem("response_min_score", 3, 3.5))
    assert "not a filter" in str(tightening_problem("temperature", 0.7, 0.9))


def test_a_tightened_filter_redoes_its_stage_and_every_later_one() -> None:
    assert stages_from(THRESHOLD_STAGES["consistency_min_confidence"]) == (
        "consistency",
        "perception",
        "responses",
        "response_filter",
        "response_audio",
    )
    assert stages_from(THRESHOLD_STAGES["query_min_score"])[0] == "query_filter"
    assert stages_from(THRESHOLD_STAGES["response_min_score"]) == ("response_filter", "response_audio")


def test_only_samples_the_filter_kept_are_judged_again() -> None:
    assert affected_samples({1: "kept", 2: "dropped", 3: "kept"}) == {1, 3}
