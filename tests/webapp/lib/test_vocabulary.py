"""The benchmark vocabulary is defined once; model choices, item files, labels and rubrics read it."""

from __future__ import annotations

import re

import pytest

from annotation.labelling.schema import CHOICES, check_perception
from annotation.recording.item_import import parse_items
from annotation.recording.models import Emotion, Intensity, Item, Scenario, Split
from evaluation.judging import rubrics
from evaluation.results import leaderboard
from webapp.lib import vocabulary
from webapp.lib.vocabulary import (
    CONFLICT_KINDS,
    DEFAULT_INTENSITY,
    DEFAULT_SPLIT,
    DEFAULT_STRATEGIES,
    EMOTIONS,
    INTENSITIES,
    INTONATIONS,
    ITEM_SPLITS,
    POLARITIES,
    PROSODY_LEVELS,
    SCENARIOS,
    SPLITS,
    choice,
    label,
)

SLUG = re.compile(r"[a-z]+(-[a-z]+)*")


@pytest.mark.parametrize(
    "values", [SCENARIOS, EMOTIONS, INTENSITIES, SPLITS, POLARITIES, PROSODY_LEVELS, INTONATIONS]
)
def test_every_vocabulary_is_distinct_lowercase_slugs(values: tuple[str, ...]) -> None:
    assert len(set(values)) == len(values)
    assert all(SLUG.fullmatch(value) for value in values)


def test_defaults_and_strategies_belong_to_their_vocabularies() -> None:
    assert DEFAULT_INTENSITY in INTENSITIES and DEFAULT_SPLIT in SPLITS
    assert CONFLICT_KINDS[0] == ""  # "no conflict" is the empty label
    slugs = [slug for slug, _ in DEFAULT_STRATEGIES]
    assert len(slugs) == len(set(slugs)) == 9
    assert all(SLUG.fullmatch(slug) for slug in slugs)


def test_labels_capitalise_the_value() -> None:
    assert label("audio-dominant") == "Audio-dominant"
    assert choice("dev") == ("dev", "Dev")


def test_model_choices_are_the_vocabulary_in_order() -> None:
    assert Scenario.choices == [choice(value) for value in SCENARIOS]
    assert Emotion.choices == [choice(value) for value in EMOTIONS]
    assert Intensity.choices == [choice(value) for value in INTENSITIES]
    assert Split.echoeval_choices() == [choice(value) for value in SPLITS]
    assert tuple(Split.values) == ITEM_SPLITS
    fields = {field.name: field for field in Item._meta.get_fields() if hasattr(field, "default")}
    assert (fields["target_intensity"].default, fields["split"].default) == (DEFAULT_INTENSITY, DEFAULT_SPLIT)


def test_item_files_accept_exactly_the_vocabulary() -> None:
    rows = [
        "external_id,text,scenario,target_emotion,target_intensity,split",
        *(
            f"EE-{n},Hello.,{SCENARIOS[n % 5]},{emotion},{INTENSITIES[n % 3]},{SPLITS[n % 3]}"
            for n, emotion in enumerate(EMOTIONS)
        ),
        "EE-X,Hello.,sarcastic,happy,,",
    ]
    parsed = parse_items("\n".join(rows).encode(), "items.csv")
    assert [row.target_emotion for row in parsed.rows] == list(EMOTIONS)
    assert [(error.row, error.field) for error in parsed.errors] == [(len(EMOTIONS) + 2, "scenario")]


def test_label_schema_and_rubrics_read_the_vocabulary() -> None:
    assert CHOICES["emotion"] == EMOTIONS and CHOICES["polarity"] == POLARITIES
    assert CHOICES["pitch"] == PROSODY_LEVELS and CHOICES["conflict_kind"] == CONFLICT_KINDS
    assert leaderboard.SCENARIOS is vocabulary.SCENARIOS
    assert vars(rubrics)["MODALITY_CONFLICT"] is vocabulary.MODALITY_CONFLICT
    problems = check_perception({"emotion": "joy", "polarity": "mixed"})
    assert [problem.field for problem in problems] == ["perception.emotion"]
