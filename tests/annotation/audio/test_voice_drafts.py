"""Measured intensity and gender drafts (annotation/audio/voice_drafts.py) and their bench figures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from annotation.audio.acoustics import analyze, scalar_features
from annotation.audio.synthesis import synthesize
from annotation.audio.voice_drafts import (
    DRAFT_ACCURACY,
    INTENSITY_EDGES,
    arousal_against,
    gender_draft,
    intensity_draft,
)

BENCH_RESULTS = Path(__file__).resolve().parents[3] / "bench" / "results" / "drafts_accuracy.json"
SENTENCE = "I waited all day and nobody came to see me."
# A speaker's usual takes: cues spread around 200 Hz, 6 semitones of range, -24 LUFS, -18 dB of
# tilt and 12 phones per second.
USUAL = [
    {
        "median_f0_hz": 200.0 * 2 ** (step / 12),
        "f0_range_semitones": 6.0 + step,
        "integrated_loudness_lufs": -24.0 + step,
        "spectral_tilt_db": -18.0 + step,
        "phones_per_second": 12.0 * (1 + 0.05 * step),
    }
    for step in (-1, 0, 1, 0.5, -0.5)
]


def features_of(voice: str, pitch: int = 50) -> dict[str, object]:
    speech = synthesize(SENTENCE, voice=voice, pitch=pitch)
    return dict(scalar_features(analyze(speech.samples.astype(np.float64) / 32768, speech.sample_rate)))


@pytest.mark.parametrize(
    ("voice", "gender"), [("en-us+f3", "female"), ("en-us+f2", "female"), ("en-us", "male")]
)
def test_gender_is_drafted_from_the_measured_pitch_of_espeak_voices(voice: str, gender: str) -> None:
    assert gender_draft(features_of(voice)) == gender


def test_no_voiced_speech_drafts_no_gender() -> None:
    assert gender_draft({"median_f0_hz": None}) is None
    assert gender_draft({}) is None


def test_a_delivery_far_from_the_speakers_usual_one_drafts_high_either_way() -> None:
    usual = dict(USUAL[1])
    raised = {
        **usual,
        "median_f0_hz": 320.0,
        "f0_range_semitones": 12.0,
        "integrated_loudness_lufs": -16.0,
        "spectral_tilt_db": -10.0,
        "phones_per_second": 17.0,
    }
    lowered = {
        **usual,
        "median_f0_hz": 140.0,
        "f0_range_semitones": 2.0,
        "integrated_loudness_lufs": -32.0,
        "spectral_tilt_db": -26.0,
        "phones_per_second": 8.0,
    }

    assert intensity_draft(usual, USUAL) == "low"
    assert intensity_draft(raised, USUAL) == "high"
    assert intensity_draft(lowered, USUAL) == "high"  # a strong sadness moves the voice down
    arousal = arousal_against(raised, USUAL)
    assert arousal is not None and arousal > INTENSITY_EDGES[1]


def test_too_few_other_takes_draft_no_intensity() -> None:
    assert intensity_draft(USUAL[0], USUAL[1:3]) is None
    assert intensity_draft({}, USUAL) is None


def test_the_accuracy_shown_beside_each_draft_is_the_benchs_saved_figure() -> None:
    saved = json.loads(BENCH_RESULTS.read_text())

    assert {"intensity": saved["intensity_accuracy"], "gender": saved["gender_accuracy"]} == DRAFT_ACCURACY
    assert list(INTENSITY_EDGES) == saved["intensity_edges"]
