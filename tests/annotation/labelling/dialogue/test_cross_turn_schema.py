"""The cross-turn label rules, without a database: which items carry them, what a draft may keep."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.labelling.dialogue.cross_turn import (
    check_cross_turn,
    empty_cross_turn,
    needs_cross_turn,
    normalise_cross_turn,
)
from webapp.lib.vocabulary import EMOTION_CHANGES, STRATEGY_OUTCOMES

SLUGS = {"emotional-validation", "questioning"}


def complete(**overrides: Any) -> dict[str, Any]:
    document = {
        "emotion_change": "intensified",
        "emotion_change_cause": "The advice felt dismissive",
        "last_strategy_helped": "no",
        "strategy_adaptation": "Stop advising; validate the fear first",
        "adaptation_strategies": ["emotional-validation"],
    }
    document.update(overrides)
    return document


@pytest.mark.parametrize(("turn", "needed"), [(None, False), (1, False), (2, True), (5, True)])
def test_only_a_dialogue_turn_after_the_first_needs_cross_turn_labels(turn: int | None, needed: bool) -> None:
    assert needs_cross_turn(turn) is needed


def test_the_vocabularies_are_the_fixed_ones() -> None:
    assert EMOTION_CHANGES == ("intensified", "eased", "unchanged", "shifted")
    assert STRATEGY_OUTCOMES == ("yes", "partly", "no")


@pytest.mark.parametrize("complete_flag", [False, True])
def test_a_first_turn_or_single_item_accepts_nothing_labelled(complete_flag: bool) -> None:
    for raw in (None, {}, empty_cross_turn()):
        assert check_cross_turn(raw, needed=False, strategy_slugs=SLUGS, complete=complete_flag) == []
    assert normalise_cross_turn(complete(), needed=False) == {}


@pytest.mark.parametrize("complete_flag", [False, True])
def test_a_first_turn_refuses_cross_turn_labels_even_in_a_draft(complete_flag: bool) -> None:
    problems = check_cross_turn(
        {"emotion_change": "eased"}, needed=False, strategy_slugs=SLUGS, complete=complete_flag
    )
    assert [(p.field, p.incomplete) for p in problems] == [("cross_turn", False)]
    assert "later turn" in problems[0].message


def test_a_later_turn_submission_needs_all_four_answers() -> None:
    problems = check_cross_turn({}, needed=True, strategy_slugs=SLUGS, complete=True)
    assert sorted(p.field for p in problems) == [
        "cross_turn.emotion_change",
        "cross_turn.emotion_change_cause",
        "cross_turn.last_strategy_helped",
        "cross_turn.strategy_adaptation",
    ]
    assert all(p.incomplete for p in problems)  # a draft may keep them unfinished
    assert check_cross_turn({}, needed=True, strategy_slugs=SLUGS, complete=False) == []


def test_a_complete_later_turn_passes_and_the_strategies_are_optional() -> None:
    assert check_cross_turn(complete(), needed=True, strategy_slugs=SLUGS, complete=True) == []
    assert check_cross_turn(complete(adaptation_strategies=[]), needed=True, complete=True) == []


def test_values_outside_the_vocabulary_are_refused_in_drafts_too() -> None:
    raw = complete(emotion_change="furious", last_strategy_helped="maybe", adaptation_strategies=["nagging"])
    problems = check_cross_turn(raw, needed=True, strategy_slugs=SLUGS, complete=False)
    assert {(p.field, p.incomplete) for p in problems} == {
        ("cross_turn.emotion_change", False),
        ("cross_turn.last_strategy_helped", False),
        ("cross_turn.adaptation_strategies", False),
    }
    assert problems[0].label == "Emotion change since the last turn"


def test_wrong_types_are_refused() -> None:
    problems = check_cross_turn(
        complete(emotion_change_cause=3, adaptation_strategies="questioning"), needed=True, complete=False
    )
    assert {p.field for p in problems} == {
        "cross_turn.emotion_change_cause",
        "cross_turn.adaptation_strategies",
    }
    assert [p.field for p in check_cross_turn(["eased"], needed=True)] == ["cross_turn"]  # type: ignore[arg-type]


def test_normalising_a_later_turn_fills_every_field_and_drops_strangers() -> None:
    document = normalise_cross_turn({"emotion_change": "eased", "mood": "x"}, needed=True)
    assert document == {**empty_cross_turn(), "emotion_change": "eased"}
