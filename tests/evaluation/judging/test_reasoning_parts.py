"""RL's split of the reasoning rubric into mental state (s2) and strategy (s3), computed by hand."""

from __future__ import annotations

import pytest

from evaluation.judging.rubrics import (
    MENTAL_STATE_SUBSCORES,
    STRATEGY_SUBSCORES,
    RubricError,
    automatic_flags,
    reasoning_part_score,
    score_stage,
)


def judgement(
    context: int = 2, latent_need: int = 2, core_demand: int = 1, strategy: int = 3, constraints: int = 1
):
    return {
        "context": context,
        "latent_need": latent_need,
        "core_demand": core_demand,
        "strategy": strategy,
        "constraints": constraints,
    }


@pytest.mark.parametrize(
    ("subscores", "flags", "mental_state", "strategy"),
    [
        # 2+2+1+1 = 6 of 7; strategy 3 of 3; no flags
        (judgement(), [], 6 / 7, 1.0),
        # a not-recommended strategy (cap 6: 4 points off) leaves strategy 0; mental state untouched
        (judgement(), ["recommends_not_recommended"], 6 / 7, 0.0),
        # no recommended strategy (cap 8: 2 points off) leaves strategy at most 1 of 3
        (judgement(), ["no_recommended_overlap"], 6 / 7, 1 / 3),
        # ... and a strategy already at 1 or below keeps its own score
        (judgement(strategy=1), ["no_recommended_overlap"], 6 / 7, 1 / 3),
        (judgement(strategy=0), ["no_recommended_overlap"], 6 / 7, 0.0),
        # both strategy flags: the larger cut wins
        (judgement(), ["no_recommended_overlap", "recommends_not_recommended"], 6 / 7, 0.0),
        # a missing mental-state field (cap 1: 9 points off) leaves mental state 0, strategy untouched
        (judgement(), ["missing_mental_state"], 0.0, 1.0),
        # a missing strategy (cap 1: 9 points off) leaves strategy 0, mental state untouched
        (judgement(), ["missing_strategy"], 6 / 7, 0.0),
        (judgement(), ["missing_strategy", "no_recommended_overlap"], 6 / 7, 0.0),
        (judgement(), ["missing_mental_state", "missing_strategy"], 0.0, 0.0),
        # the unsplit flag of a stored judgement: which field was missing is unknown, both parts go
        (judgement(), ["missing_fields"], 0.0, 0.0),
        # a wrong strategy never lowers s2 (the double credit of the whole-stage score)
        (judgement(context=0, latent_need=1, core_demand=0, constraints=0, strategy=0), [], 1 / 7, 0.0),
    ],
)
def test_hand_computed_parts(
    subscores: dict[str, int], flags: list[str], mental_state: float, strategy: float
) -> None:
    assert reasoning_part_score(subscores, flags, MENTAL_STATE_SUBSCORES) == pytest.approx(mental_state)
    assert reasoning_part_score(subscores, flags, STRATEGY_SUBSCORES) == pytest.approx(strategy)


def test_perfect_mental_state_without_a_strategy_lowers_s3_only() -> None:
    # The case: full mental-state fields, no strategy. The app flags the strategy alone,
    # so s2 keeps 7 of 7 (gate g2 stays open) and s3 is 0; EchoEval's stage is still capped at 1.
    fields = {"context": "c", "latent_need": "n", "core_demand": "d"}
    flags = automatic_flags("reasoning", fields, {"recommended_strategies": ["reassurance"]})
    assert flags == {"missing_strategy"}
    subscores = judgement(core_demand=2, strategy=0)
    assert reasoning_part_score(subscores, flags, MENTAL_STATE_SUBSCORES) == 1.0
    assert reasoning_part_score(subscores, flags, STRATEGY_SUBSCORES) == 0.0
    assert score_stage("reasoning", subscores, flags).final == 1.0


def test_the_whole_stage_score_still_counts_the_strategy_for_echoeval() -> None:
    assert score_stage("reasoning", judgement(), ["no_recommended_overlap"]).final == 8.0


def test_a_broken_judgement_is_a_rubric_error() -> None:
    with pytest.raises(RubricError, match="outside"):
        reasoning_part_score(judgement(strategy=4), [], STRATEGY_SUBSCORES)
    with pytest.raises(RubricError, match="unknown reasoning flag"):
        reasoning_part_score(judgement(), ["harmful"], STRATEGY_SUBSCORES)
    with pytest.raises(RubricError, match="unknown reasoning part"):
        reasoning_part_score(judgement(), [], ("tone",))


def test_an_empty_response_caps_content_at_one() -> None:
    flags = automatic_flags("response_content", "  ", {})
    assert flags == {"empty_response"}
    assert score_stage("response_content", {"content": 5}, flags).final == 1.0
    assert automatic_flags("response_content", None, {}) == {"empty_response"}
