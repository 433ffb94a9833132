"""Automatic perception labels are complete label documents the workbench schema accepts."""

from __future__ import annotations

from annotation.labelling.schema import check_perception
from ml.builder.logic.perception import perception_labels, perception_text, prosody_levels

BASELINE = {"median_f0_hz": 100.0, "phones_per_second": 12.0, "mean_intensity_db": 70.0}


def test_levels_are_read_against_the_voice_speaking_neutrally() -> None:
    loud_fast_high = {"median_f0_hz": 130.0, "phones_per_second": 16.0, "mean_intensity_db": 75.0}
    assert prosody_levels(loud_fast_high, BASELINE) == {"pitch": "high", "energy": "high", "rate": "high"}
    assert prosody_levels(BASELINE, BASELINE) == {"pitch": "normal", "energy": "normal", "rate": "normal"}
    assert prosody_levels({}, BASELINE) == {"pitch": "", "energy": "", "rate": ""}


def test_labels_pass_the_workbench_schema_and_read_as_a_description() -> None:
    features = {
        "median_f0_hz": 80.0,
        "phones_per_second": 9.0,
        "mean_intensity_db": 66.0,
        "intonation": "falling",
        "pauses": {"count": 2, "longest_seconds": 0.4},
    }
    labels = perception_labels(
        features,
        BASELINE,
        emotion="sad",
        emotion_variant="grief",
        intensity="high",
        situation="a parent's illness",
        modality_conflict=False,
    )
    assert check_perception(labels, complete=True) == []
    assert labels["polarity"] == "negative" and labels["rate"] == "low"
    assert (
        labels["prosody_caption"]
        == "Slow, low-pitched, quiet speech with a falling contour and 2 pauses, conveying high sad"
    )
    assert "Emotion: sad (grief)" in perception_text(labels)


def test_a_modality_conflict_sample_is_labelled_sarcasm() -> None:
    labels = perception_labels(
        BASELINE,
        BASELINE,
        emotion="angry",
        emotion_variant="",
        intensity="low",
        situation="x",
        modality_conflict=True,
    )
    assert (labels["modality_conflict"], labels["conflict_kind"]) == (True, "sarcasm")
