"""What the stored acoustic analysis suggests, and the contour points the waveform draws."""

from __future__ import annotations

from annotation.audio.suggestions import contours_for_waveform, suggestions_from_features


def test_levels_and_intonation_become_suggestions() -> None:
    # As annotation.recording.takes stores them: a level is None when the speaker has too few other takes.
    features = {
        "median_f0_hz": 210.0,
        "pitch_level": "high",
        "energy_level": "low",
        "rate_level": None,
        "intonation": "rising-falling",
    }
    assert suggestions_from_features(features) == {
        "pitch": "high",
        "energy": "low",
        "intonation": "rising-falling",
    }


def test_unknown_values_and_unanalysed_takes_suggest_nothing() -> None:
    features = {"pitch_level": "normal", "rate_level": "fast", "intonation": "wobbly"}
    assert suggestions_from_features(features) == {"pitch": "normal"}
    assert suggestions_from_features({}) == {}


def test_contours_drop_unvoiced_frames() -> None:
    contours = {
        "pitch": {"times": [0.0, 0.01, 0.02], "hz": [200.0, None, 210.456]},
        "intensity": {"times": [0.0, 0.01], "db": [60.0, 61.0]},
    }
    assert contours_for_waveform(contours) == {
        "pitch": [[0.0, 200.0], [0.02, 210.46]],
        "energy": [[0.0, 60.0], [0.01, 61.0]],
    }
    assert contours_for_waveform({}) == {"pitch": [], "energy": []}
