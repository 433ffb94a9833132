"""DNSMOS falls with added noise; loudness matches BS.1770 and normalising reaches its target."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio.speech.loudness import loudness, normalised, true_peak_dbtp
from annotation.audio.speech.quality import dnsmos_scores, tiled, windows
from tests.annotation.audio.speech.espeak import RATE, SENTENCES, spoken, with_noise


def test_dnsmos_falls_steadily_with_added_noise() -> None:
    clean, _ = spoken(SENTENCES[0])
    scores = [dnsmos_scores(clean)] + [dnsmos_scores(with_noise(clean, snr)) for snr in (20.0, 10.0, 0.0)]
    p808 = [score.p808 for score in scores if score]
    background = [score.background for score in scores if score]
    assert len(p808) == 4
    assert p808 == sorted(p808, reverse=True)
    assert background == sorted(background, reverse=True)
    assert p808[0] - p808[-1] > 0.8


def test_short_clips_are_tiled_not_padded_and_very_short_ones_unscored() -> None:
    clip = np.arange(1, 4, dtype=np.float64)
    assert tiled(clip, seconds=7 / RATE).tolist() == [1, 2, 3, 1, 2, 3, 1]
    assert len(windows(tiled(np.ones(8 * RATE)))) == 1  # a short take is read in one window
    assert dnsmos_scores(np.zeros(RATE // 2)) is None


def test_loudness_of_a_full_scale_sine_and_its_true_peak() -> None:
    # BS.1770: a 997 Hz sine at 0 dBFS peak reads -3.01 LUFS.
    sine = np.sin(2 * np.pi * 997 * np.arange(3 * RATE) / RATE)
    measured = loudness(sine, RATE)
    assert measured.integrated_lufs == pytest.approx(-3.01, abs=0.1)
    assert measured.true_peak_dbtp == pytest.approx(0.0, abs=0.1)
    # A peak between samples: a sine at a quarter of the rate, sampled at 45 degrees, reads 3 dB low.
    quarter = np.sin(2 * np.pi * (RATE / 4) * np.arange(RATE) / RATE + np.pi / 4)
    assert 20 * np.log10(np.max(np.abs(quarter))) == pytest.approx(-3.01, abs=0.05)
    assert true_peak_dbtp(quarter, RATE) > -0.5


def test_normalising_reaches_the_study_level_without_clipping() -> None:
    speech, _ = spoken(SENTENCES[1])
    quiet = normalised(speech * 0.05, RATE, target_lufs=-26.0)
    assert loudness(quiet, RATE).integrated_lufs == pytest.approx(-26.0, abs=0.2)
    loud = normalised(speech, RATE, target_lufs=0.0)
    assert loudness(loud, RATE).true_peak_dbtp <= -0.9


def test_long_clips_are_read_in_windows_side_by_side_the_last_ending_at_the_end() -> None:
    size = round(9.01 * RATE)
    clip = np.arange(2 * size + 3 * RATE, dtype=np.float64)
    starts = [int(window[0]) for window in windows(clip)]
    assert starts == [0, size, len(clip) - size]
    assert all(len(window) == size for window in windows(clip))
    assert [int(w[0]) for w in windows(clip[: 2 * size + RATE // 2])] == [0, size]  # a short rest is left


def test_a_clip_longer_than_three_windows_is_read_in_three_spread_from_start_to_end() -> None:
    size = round(9.01 * RATE)
    clip = np.arange(60 * RATE, dtype=np.float64)
    starts = [int(window[0]) for window in windows(clip)]
    assert starts == [0, round((len(clip) - size) / 2), len(clip) - size]
    assert all(len(window) == size for window in windows(clip))
