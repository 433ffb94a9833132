"""Speech regions from silero-vad on eSpeak NG speech placed in silence and in noise."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio.speech.activity import speech_activity
from tests.annotation.audio.speech.espeak import RATE, SENTENCES, spoken, with_noise


def _placed() -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Return two sentences with 1 s of silence before, 1.2 s between and 0.8 s after, and their spans."""
    first, _ = spoken(SENTENCES[0])
    second, _ = spoken(SENTENCES[2])
    gap = lambda seconds: np.zeros(round(seconds * RATE))  # noqa: E731
    samples = np.concatenate([gap(1.0), first, gap(1.2), second, gap(0.8)])
    start_second = 1.0 + len(first) / RATE + 1.2
    return samples, [(1.0, 1.0 + len(first) / RATE), (start_second, start_second + len(second) / RATE)]


@pytest.mark.parametrize("snr_db", [None, 10.0])
def test_speech_regions_are_found_in_silence_and_at_10_db_snr(snr_db: float | None) -> None:
    samples, truth = _placed()
    if snr_db is not None:
        samples = with_noise(samples, snr_db)
    activity = speech_activity(samples)
    # The sentences' own short stops may split a region; the outer edges and the long gap must hold.
    # eSpeak NG's readings of one text differ slightly from call to call (75,205-75,409 samples
    # measured for SENTENCES[2]), and in noise the fading last word can move the end by ~0.2 s.
    assert activity.regions[0][0] == pytest.approx(truth[0][0], abs=0.15)
    assert activity.regions[-1][1] == pytest.approx(truth[1][1], abs=0.25)
    assert activity.leading_silence == pytest.approx(1.0, abs=0.15)
    assert activity.trailing_silence == pytest.approx(0.8, abs=0.25)
    assert max(activity.pauses) == pytest.approx(1.2, abs=0.25)
    summary = activity.summary()
    assert summary["longest_pause_seconds"] == max(activity.pauses)
    assert 0 < summary["pause_share"] < 0.5


def test_noise_alone_holds_no_speech() -> None:
    noise = np.random.default_rng(3).normal(0.0, 0.01, 3 * RATE)
    assert speech_activity(noise).regions == ()
