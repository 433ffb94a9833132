import json
import math

import numpy as np
import pytest

from annotation.audio.acoustics import (
    AcousticAnalysis,
    analyze,
    classify_intonation,
    clipping_ratio,
    count_words,
    integrated_loudness_lufs,
    k_weighting_filters,
    peak_dbfs,
    rms_dbfs,
    scalar_features,
)
from annotation.audio.prosody import contours_for_display, relative_levels
from annotation.audio.synthesis import synthesize
from tests.annotation.audio.audio_corpus import RATE, glide, harmonic_tone, sine

SENTENCE = "I honestly did not expect you to remember my birthday, and it made my whole week."


@pytest.fixture(scope="module")
def steady_tone() -> AcousticAnalysis:
    return analyze(harmonic_tone(np.full(2 * RATE, 200.0)), RATE)


def test_median_f0_of_a_200_hz_tone_is_200_hz(steady_tone: AcousticAnalysis) -> None:
    assert steady_tone.median_f0_hz == pytest.approx(200.0, abs=2.0)
    assert steady_tone.voiced_ratio > 0.9


@pytest.mark.parametrize(
    ("f0_points", "intonation"),
    [
        ((200.0, 200.0), "flat"),
        ((150.0, 250.0), "rising"),
        ((250.0, 150.0), "falling"),
        ((150.0, 250.0, 150.0), "rising-falling"),
        ((250.0, 150.0, 250.0), "falling-rising"),
    ],
)
def test_intonation_of_pitch_glides(f0_points: tuple[float, ...], intonation: str) -> None:
    analysis = analyze(harmonic_tone(glide(*f0_points, seconds=1.5)), RATE)

    assert analysis.intonation == intonation


@pytest.mark.parametrize(
    ("semitones", "intonation"),
    [
        (np.linspace(0.0, 1.5, 50), "flat"),  # under the 2-semitone threshold
        (np.linspace(0.0, 3.0, 50), "rising"),
        (np.linspace(0.0, -3.0, 50), "falling"),
        (np.concatenate([np.linspace(0, 4, 25), np.linspace(4, 0.5, 25)]), "rising-falling"),
        (np.concatenate([np.linspace(0, -4, 25), np.linspace(-4, 0, 25)]), "falling-rising"),
        # A peak 1 semitone above the end is no hat: the rise that carries on decides.
        (np.concatenate([np.linspace(0, 4, 35), np.linspace(4, 3, 15)]), "rising"),
    ],
)
def test_classify_intonation_thresholds(semitones: np.ndarray, intonation: str) -> None:
    assert classify_intonation(semitones) == intonation


def test_too_little_voicing_has_no_intonation() -> None:
    assert classify_intonation(np.zeros(9)) is None
    assert analyze(np.zeros(RATE), RATE).intonation is None


def test_k_weighting_at_48_khz_matches_the_bs1770_table() -> None:
    (shelf_b, shelf_a), (pass_b, pass_a) = k_weighting_filters(48_000)

    np.testing.assert_allclose(shelf_b, [1.53512485958697, -2.69169618940638, 1.19839281085285], atol=1e-12)
    np.testing.assert_allclose(shelf_a, [1.0, -1.69065929318241, 0.73248077421585], atol=1e-12)
    np.testing.assert_allclose(pass_b, [1.0, -2.0, 1.0])
    np.testing.assert_allclose(pass_a, [1.0, -1.99004745483398, 0.99007225036621], atol=1e-12)


@pytest.mark.parametrize(("sample_rate", "tolerance"), [(48_000, 0.01), (16_000, 0.1)])
def test_loudness_of_a_997_hz_sine(sample_rate: int, tolerance: float) -> None:
    # BS.1770 calibration: a 997 Hz sine reads its RMS in dBFS, amplitude 0.5 -> 20 log10(0.5) - 3.01.
    expected = 20 * math.log10(0.5) - 10 * math.log10(2)

    loudness = integrated_loudness_lufs(sine(997.0, 3.0, 0.5, sample_rate), sample_rate)

    assert loudness == pytest.approx(expected, abs=tolerance)  # -9.03 LUFS


def test_relative_gate_ignores_a_much_quieter_passage() -> None:
    loud = sine(997.0, 3.0, 0.5)
    whisper = sine(997.0, 3.0, 0.5 * 10 ** (-40 / 20))

    with_whisper = integrated_loudness_lufs(np.concatenate([loud, whisper]), RATE)

    # The relative gate (about -22 LUFS here) drops every whisper block, keeping the 27 blocks
    # inside the loud half and the 3 straddling the join at 3/4, 2/4 and 1/4 of its power:
    # 10 log10((27 + 1.5) / 30) = -0.223 dB against the loud half alone. Without the gate the
    # whisper blocks would pull the average down by about 3 dB.
    loud_alone = integrated_loudness_lufs(loud, RATE)
    assert loud_alone is not None
    assert with_whisper == pytest.approx(loud_alone + 10 * math.log10(28.5 / 30), abs=0.005)


def test_loudness_of_silence_or_under_400_ms_is_none() -> None:
    assert integrated_loudness_lufs(np.zeros(RATE), RATE) is None
    assert integrated_loudness_lufs(sine(997.0, 0.3, 0.5), RATE) is None


def test_levels_of_a_half_scale_sine() -> None:
    tone = sine(1000.0, 1.0, 0.5)

    assert peak_dbfs(tone) == pytest.approx(-6.02, abs=0.01)
    assert rms_dbfs(tone) == pytest.approx(-9.03, abs=0.01)
    assert peak_dbfs(np.zeros(10)) == -120.0


def test_clipping_ratio_counts_samples_at_full_scale() -> None:
    assert clipping_ratio(np.array([1.0, -1.0, 0.995, 0.5, 0.0, -0.2, 0.1, 0.3])) == 3 / 8
    assert clipping_ratio(np.array([32767, 0, 100, -32768], dtype=np.int16)) == 2 / 4


def test_silence_ratio_from_a_known_layout() -> None:
    # 1 s silence, 2 s of tone, 1 s silence.
    layout = np.concatenate([np.zeros(RATE), harmonic_tone(np.full(2 * RATE, 180.0)), np.zeros(RATE)])

    assert analyze(layout, RATE).silence_ratio == pytest.approx(0.5, abs=0.01)


def test_count_words_keeps_contractions_whole() -> None:
    assert count_words("Don't worry, it's   fine — really!") == 5


def test_higher_espeak_pitch_measures_higher_median_f0() -> None:
    low = synthesize(SENTENCE, pitch=20)
    high = synthesize(SENTENCE, pitch=80)

    low_f0 = analyze(low.samples, low.sample_rate).median_f0_hz
    high_f0 = analyze(high.samples, high.sample_rate).median_f0_hz

    assert low_f0 is not None and high_f0 is not None
    assert high_f0 > low_f0 * 1.15


def test_relative_levels_by_z_score() -> None:
    others = [100.0, 110.0, 120.0]  # mean 110, sample standard deviation 10

    assert relative_levels(150.0, others) == "high"
    assert relative_levels(112.0, others) == "normal"
    assert relative_levels(90.0, others) == "low"


def test_relative_levels_need_three_other_takes() -> None:
    assert relative_levels(500.0, [100.0, 110.0]) == "normal"
    assert relative_levels(500.0, []) == "normal"


def test_display_contours_are_short_and_json_safe() -> None:
    # 3 s of tone with a silent middle second: 300 pitch frames averaged into at most 50 points.
    tone = harmonic_tone(np.full(RATE, 200.0))
    analysis = analyze(np.concatenate([tone, np.zeros(RATE), tone]), RATE)

    contours = contours_for_display(analysis, max_points=50)

    json.dumps(contours, allow_nan=False)
    assert len(contours["pitch"]["times"]) == len(contours["pitch"]["hz"]) <= 50
    assert len(contours["intensity"]["db"]) <= 50
    assert None in contours["pitch"]["hz"]  # the silent second is a gap
    assert max(v for v in contours["pitch"]["hz"] if v is not None) == pytest.approx(200.0, abs=2.0)
    assert contours["pitch"]["times"] == sorted(contours["pitch"]["times"])


def test_scalar_features_are_json_safe(steady_tone: AcousticAnalysis) -> None:
    features = scalar_features(steady_tone)

    json.dumps(features, allow_nan=False)
    assert features["intonation"] == "flat"
    assert "words_per_second" not in features  # speaking rate is the aligner's (speech/rate.py)


def test_integer_pcm_is_scaled_to_full_scale() -> None:
    pcm = np.array([16384, -16384] * 4000, dtype=np.int16)

    assert analyze(pcm, RATE).peak_dbfs == pytest.approx(-6.02, abs=0.01)


def test_spectral_tilt_rises_with_energy_above_1_khz() -> None:
    tone = harmonic_tone(np.full(RATE, 200.0))
    hiss = np.random.default_rng(0).normal(0.0, 0.2, RATE)

    low = analyze(tone, RATE).spectral_tilt_db
    brighter = analyze(tone + hiss, RATE).spectral_tilt_db
    pure = analyze(sine(300.0, 1.0, 0.5), RATE).spectral_tilt_db

    assert low is not None and brighter is not None and pure is not None
    assert brighter > low + 3.0
    assert pure < -30.0  # a 300 Hz sine has almost nothing between 1 and 5 kHz
    assert analyze(np.zeros(RATE), RATE).spectral_tilt_db is None
