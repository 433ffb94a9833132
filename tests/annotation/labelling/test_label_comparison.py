"""Comparing annotators field by field: agreement, the proposed gold, and fast-track eligibility."""

from __future__ import annotations

from annotation.labelling.comparison import (
    Labels,
    categorical_fields_agree,
    compare_labels,
    labels_agree_on_categories,
    proposed_labels,
    readable_fields,
)
from annotation.labelling.schema import script_words
from tests.annotation.labelling.support import SCRIPT, perception, tom


def by_path(comparisons):
    return {comparison.path: comparison for comparison in comparisons}


def test_identical_annotations_agree_everywhere_and_can_be_fast_tracked() -> None:
    labels = [Labels(perception(), tom()) for _ in range(3)]
    comparisons = compare_labels(labels)
    assert all(comparison.agreed for comparison in comparisons)
    assert categorical_fields_agree(comparisons)
    proposal = proposed_labels(comparisons)
    assert proposal.perception == perception()
    assert proposal.tom == tom()


def test_text_agrees_across_whitespace_and_case() -> None:
    labels = [
        Labels(perception(situation="Dreading  a wet Monday"), tom()),
        Labels(perception(situation="dreading a wet monday "), tom()),
    ]
    assert by_path(compare_labels(labels))["perception.situation"].agreed


def test_a_two_to_one_majority_is_proposed_and_highlighted_as_disagreement() -> None:
    labels = [
        Labels(perception(emotion="angry"), tom()),
        Labels(perception(emotion="angry"), tom()),
        Labels(perception(emotion="sad"), tom()),
    ]
    emotion = by_path(compare_labels(labels))["perception.emotion"]
    assert emotion.values == ("angry", "angry", "sad")
    assert not emotion.agreed
    assert emotion.proposal == "angry"
    assert not categorical_fields_agree(compare_labels(labels))


def test_a_tie_leaves_the_categorical_choice_to_the_lead() -> None:
    labels = [Labels(perception(polarity="negative"), tom()), Labels(perception(polarity="mixed"), tom())]
    assert by_path(compare_labels(labels))["perception.polarity"].proposal == ""


def test_sets_keep_what_a_majority_chose_in_script_order() -> None:
    labels = [
        Labels(perception(stressed_words=["love", "great"]), tom(recommended_strategies=["reassurance"])),
        Labels(perception(stressed_words=["Monday", "love"]), tom(recommended_strategies=["reassurance"])),
        Labels(
            perception(stressed_words=["great", "Monday", "love"]),
            tom(recommended_strategies=["questioning"]),
        ),
    ]
    comparisons = by_path(compare_labels(labels, script_words(SCRIPT)))
    # great: 2 of 3, Monday: 2 of 3, love: 3 of 3 -> all kept, ordered as in the script.
    assert comparisons["perception.stressed_words"].proposal == ["great", "Monday", "love"]
    assert comparisons["tom.recommended_strategies"].proposal == ["reassurance"]
    assert not comparisons["tom.recommended_strategies"].agreed


def test_free_text_comes_from_the_annotation_agreeing_most_with_the_others() -> None:
    # A and B share the emotion, B and C the intensity: B agrees most with the others.
    labels = [
        Labels(perception(emotion="angry", intensity="low", situation="A"), tom()),
        Labels(perception(emotion="angry", intensity="high", situation="B"), tom()),
        Labels(perception(emotion="sad", intensity="high", situation="C"), tom()),
    ]
    assert proposed_labels(compare_labels(labels)).perception["situation"] == "B"


def test_the_first_annotation_wins_a_tie_for_free_text() -> None:
    labels = [Labels(perception(situation="A"), tom()), Labels(perception(situation="B"), tom())]
    assert proposed_labels(compare_labels(labels)).perception["situation"] == "A"


def test_segments_agree_on_emotions_in_order_not_on_exact_times() -> None:
    a = [
        {"start": 0.0, "end": 1.0, "emotion": "happy", "words": ""},
        {"start": 1.0, "end": 2.0, "emotion": "sad", "words": ""},
    ]
    b = [
        {"start": 0.0, "end": 1.1, "emotion": "happy", "words": ""},
        {"start": 1.1, "end": 2.0, "emotion": "sad", "words": ""},
    ]
    c = [{"start": 0.0, "end": 2.0, "emotion": "sad", "words": ""}]
    assert by_path(
        compare_labels(
            [Labels(perception(emotion_segments=a), tom()), Labels(perception(emotion_segments=b), tom())]
        )
    )["perception.emotion_segments"].agreed
    assert not by_path(
        compare_labels(
            [Labels(perception(emotion_segments=a), tom()), Labels(perception(emotion_segments=c), tom())]
        )
    )["perception.emotion_segments"].agreed


def test_the_cheap_category_check_matches_the_full_comparison() -> None:
    agreeing = [Labels(perception(situation=text), tom()) for text in ("a", "b", "c")]
    disagreeing = [*agreeing[:2], Labels(perception(intensity="high"), tom())]
    for labels in (agreeing, disagreeing):
        assert labels_agree_on_categories(labels) == categorical_fields_agree(compare_labels(labels))
    assert not labels_agree_on_categories(agreeing[:1])  # one annotation agrees with nobody


def test_a_reference_reads_as_labelled_fields_in_the_workbench_order() -> None:
    segments = [{"start": 0.0, "end": 1.2, "emotion": "happy", "words": "Oh great"}]
    rows = dict(
        readable_fields(
            perception(emotion_segments=segments, emotion_variant=""),
            tom(),
            {"emotional-validation": "Emotional validation", "information": "Information"},
        )
    )
    assert rows["Primary emotion"] == "angry"
    assert rows["Text and voice conflict"] == "yes"
    assert rows["Emotion segments"] == "0.00–1.20 s happy (“Oh great”)"
    assert rows["Recommended strategies"] == "Emotional validation, reflection-of-feelings"
    assert rows["Not-recommended strategies"] == "Information"
    assert "Fine-grained variant" not in rows  # empty fields are left out
    assert list(rows)[:2] == ["Polarity", "Primary emotion"]
