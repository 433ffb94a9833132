"""Octave repair and the speaker-adaptive pitch range, by hand and on eSpeak voices."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio.acoustics import analyze, classify_intonation
from annotation.audio.pitch import MIN_FLOOR_HZ, octave_corrected, speaker_pitch_range
from annotation.audio.synthesis import synthesize
from tests.annotation.audio.audio_corpus import RATE, glide, harmonic_tone

SENTENCE = "I honestly did not expect you to remember my birthday, and it made my whole week."


def label(hz: np.ndarray) -> str | None:
    """The analysis's own reading of a contour: voiced semitones about the median, then the shape."""
    voiced = hz[~np.isnan(hz)]
    return classify_intonation(12.0 * np.log2(voiced / np.median(voiced)))


def test_doubled_and_halved_frames_of_a_flat_contour_go_back_to_their_octave() -> None:
    true = np.full(60, 200.0)
    true[[10, 11, 50]] = np.nan  # unvoiced frames stay unvoiced
    jumpy = true.copy()
    jumpy[28:32] = 400.0  # doubled
    jumpy[40:44] = 100.0  # halved

    assert label(jumpy) != "flat"  # what the smoothing made of the raw frames
    corrected = octave_corrected(jumpy)
    np.testing.assert_allclose(corrected, true)
    assert label(corrected) == "flat"


def test_a_falling_contour_with_octave_errors_stays_falling() -> None:
    # 250 -> 150 Hz over 60 frames (8.8 semitones), the shape: a run of frames an octave
    # up near the end (the tracker locked on the second harmonic) and a halved pair in the middle.
    true = np.geomspace(250.0, 150.0, 60)
    jumpy = true.copy()
    jumpy[48:56] *= 2.0
    jumpy[25:27] /= 2.0

    assert label(jumpy) == "falling-rising"
    corrected = octave_corrected(jumpy)
    np.testing.assert_allclose(corrected, true)
    assert label(corrected) == "falling"


@pytest.mark.parametrize(
    "contour",
    [
        np.geomspace(150.0, 250.0, 80),  # a genuine 8.8-semitone rise
        np.concatenate([np.geomspace(150.0, 260.0, 40), np.geomspace(260.0, 150.0, 40)]),  # a hat
        200.0 * 2 ** (np.sin(np.linspace(0, 6 * np.pi, 90)) * 5 / 12),  # +-5 semitone accents
    ],
)
def test_real_pitch_movements_are_left_alone(contour: np.ndarray) -> None:
    np.testing.assert_array_equal(octave_corrected(contour), contour)


def test_the_second_pass_range_is_fitted_to_the_speaker_by_hand() -> None:
    voiced = np.arange(80.0, 120.0)  # 40 frames
    # q25 = 80 + 0.25 x 39 = 89.75, q75 = 80 + 0.75 x 39 = 109.25
    assert speaker_pitch_range(voiced) == pytest.approx((0.75 * 89.75, 2.0 * 109.25))
    # unvoiced (NaN) frames do not count; too few voiced frames: no fitted range
    assert speaker_pitch_range(np.concatenate([voiced[:19], [np.nan] * 30])) is None
    # a creaky first pass is not followed below the lowest floor
    assert speaker_pitch_range(np.full(30, 45.0)) == pytest.approx((MIN_FLOOR_HZ, 90.0))


def test_a_tone_that_jumps_an_octave_for_50_ms_keeps_its_fall() -> None:
    f0 = glide(250.0, 150.0, seconds=1.5)
    f0[int(1.1 * RATE) : int(1.15 * RATE)] *= 2.0
    analysis = analyze(harmonic_tone(f0), RATE)

    assert analysis.intonation == "falling"
    assert analysis.f0_range_semitones is not None and analysis.f0_range_semitones < 10.0


@pytest.mark.parametrize(("voice", "pitch"), [("en-us", 20), ("en-us", 0), ("en-us+m1", 20)])
def test_a_low_male_espeak_voice_keeps_its_voiced_share_and_range(voice: str, pitch: int) -> None:
    # One pass at 75-600 Hz gave these readings 0.24-0.41 voiced and a 31-32 semitone range
    # (frames near 450 Hz); a neutral eSpeak reading spans about 5-8.
    speech = synthesize(SENTENCE, pitch=pitch, voice=voice)
    analysis = analyze(speech.samples, speech.sample_rate)

    assert analysis.voiced_ratio >= 0.6
    assert analysis.median_f0_hz is not None and 55.0 < analysis.median_f0_hz < 90.0
    assert analysis.f0_range_semitones is not None and analysis.f0_range_semitones < 10.0
    assert analysis.f0_high_hz is not None and analysis.f0_high_hz < 150.0
