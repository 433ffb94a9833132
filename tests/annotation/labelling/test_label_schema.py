"""The label documents' vocabulary checks: drafts may be half-filled, submissions must be complete."""

from __future__ import annotations

from annotation.labelling.schema import (
    check_perception,
    check_tom,
    empty_perception,
    field_label,
    normalise_perception,
    script_words,
)
from annotation.recording.models import Emotion
from tests.annotation.labelling.support import SCRIPT, perception, tom
from webapp.lib.vocabulary import EMOTIONS

SLUGS = {"emotional-validation", "reflection-of-feelings", "information", "reassurance"}


def fields(problems) -> set[str]:
    return {problem.field for problem in problems}


def test_emotions_are_the_item_emotions_in_order() -> None:
    assert list(EMOTIONS) == list(Emotion.values)


def test_script_words_keep_contractions_whole() -> None:
    assert script_words("I don't know, it's fine.") == ["I", "don't", "know", "it's", "fine"]


def test_an_empty_draft_is_valid_but_not_complete() -> None:
    assert check_perception(empty_perception()) == []
    missing = fields(check_perception(empty_perception(), complete=True))
    assert {
        "perception.polarity",
        "perception.emotion",
        "perception.intensity",
        "perception.situation",
    } <= missing
    assert "perception.emotion_variant" not in missing  # a variant is optional


def test_complete_documents_pass() -> None:
    assert check_perception(perception(), words=script_words(SCRIPT), complete=True) == []
    assert check_tom(tom(), strategy_slugs=SLUGS, complete=True) == []


def test_values_outside_the_vocabularies_are_refused() -> None:
    problems = check_perception(normalise_perception({"polarity": "furious", "pitch": "medium"}))
    assert fields(problems) == {"perception.polarity", "perception.pitch"}


def test_stressed_words_must_come_from_the_script() -> None:
    problems = check_perception(perception(stressed_words=["great", "Tuesday"]), words=script_words(SCRIPT))
    assert [problem.message for problem in problems] == ["Not words of the script: Tuesday"]


def test_a_conflict_needs_its_kind() -> None:
    problems = check_perception(perception(conflict_kind=""), complete=True)
    assert fields(problems) == {"perception.conflict_kind"}


def test_emotion_shift_items_need_two_ordered_segments() -> None:
    one = [{"start": 0.0, "end": 1.0, "emotion": "happy", "words": "Oh great"}]
    assert fields(check_perception(perception(emotion_segments=one), emotion_shift=True, complete=True)) == {
        "perception.emotion_segments"
    }
    overlapping = [*one, {"start": 0.5, "end": 1.5, "emotion": "sad", "words": "Monday"}]
    messages = [p.message for p in check_perception(perception(emotion_segments=overlapping))]
    assert messages == ["Segment 2 overlaps the one before it."]
    backwards = [{"start": 1.0, "end": 0.5, "emotion": "sad", "words": ""}]
    assert [p.message for p in check_perception(perception(emotion_segments=backwards))] == [
        "Segment 1 needs a start before its end."
    ]


def test_a_strategy_cannot_be_both_recommended_and_not() -> None:
    problems = check_tom(tom(not_recommended_strategies=["emotional-validation"]), strategy_slugs=SLUGS)
    assert [p.message for p in problems] == ["Both recommended and not: emotional-validation"]


def test_unknown_strategies_and_missing_recommendations() -> None:
    problems = check_tom(tom(recommended_strategies=["hugging"]), strategy_slugs=SLUGS, complete=True)
    assert [p.message for p in problems] == ["Unknown strategies: hugging"]
    problems = check_tom(tom(recommended_strategies=[]), strategy_slugs=SLUGS, complete=True)
    assert [p.message for p in problems] == ["Recommend at least one strategy."]


def test_unfinished_work_is_marked_so_a_draft_may_keep_it() -> None:
    segments = [
        {"start": 0.0, "end": 1.0, "emotion": "", "words": ""},
        {"start": 1.2, "end": 1.1, "emotion": "sad"},
    ]
    problems = check_perception(perception(emotion_segments=segments))
    assert [(p.message, p.incomplete) for p in problems] == [
        ("Segment 1 needs an emotion.", True),
        ("Segment 2 needs a start before its end.", True),
    ]
    malformed = check_perception(perception(emotion_segments=[{"start": 0, "end": 1, "emotion": "glee"}]))
    assert [(str(p), p.incomplete) for p in malformed] == [
        ("Emotion segments: Segment 1: 'glee' is not an emotion.", False)
    ]
    assert all(p.incomplete for p in check_perception(normalise_perception({}), complete=True))


def test_problems_read_with_human_field_names() -> None:
    (problem,) = check_perception(normalise_perception({"polarity": "furious"}))
    assert problem.label == "Polarity"
    assert str(problem).startswith("Polarity: 'furious' is not one of")
    assert field_label("tom.latent_need") == "Latent need"
