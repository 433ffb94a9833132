"""The take's SNR from the VAD, vocal events outside speech, and trim advice that keeps them (issue 39)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio import rooms
from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.conditions import (
    MIN_SNR_SCRIPT_DB,
    noise_sample,
    noise_windows,
    recording_conditions,
)
from annotation.audio.speech.events import KEEP_SECONDS, VocalEvent, trim_advice, vocal_events
from tests.annotation.audio.speech.espeak import RATE, spoken

SCRIPT = "The office is closed today"


def _take(*parts: np.ndarray) -> np.ndarray:
    return np.concatenate(parts)


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(round(seconds * RATE))


@pytest.mark.parametrize(("kind", "low", "high"), [("fan", -3, 3), ("white", -3, 3), ("babble", -3, 5)])
def test_the_snr_estimate_follows_the_mixed_snr_in_each_room(kind: str, low: float, high: float) -> None:
    # Babble reads a little high: the VAD hears the other voices as speech (docs/benchmarks.md).
    speech, _ = spoken(SCRIPT)
    take = _take(_silence(0.6), speech, _silence(0.6))
    for snr in (20.0, 10.0):
        noisy = rooms.mixed(take, rooms.NOISES[kind](len(take) / RATE, seed=4), snr)
        estimate = recording_conditions(noisy, speech_activity(noisy).regions).snr_db
        assert estimate is not None and snr + low <= estimate <= snr + high


def test_a_clean_take_reads_as_clean_and_no_speech_has_no_snr() -> None:
    speech, _ = spoken(SCRIPT)
    take = _take(_silence(0.5), speech, _silence(0.5))
    assert recording_conditions(take, speech_activity(take).regions).snr_db >= 40  # type: ignore[operator]
    hum = rooms.fan(2.0) * 0.01
    assert recording_conditions(hum, ()).snr_db is None


@pytest.mark.parametrize("kind", rooms.EVENT_KINDS)
def test_each_vocal_event_after_the_last_word_is_found_and_never_cut(kind: str) -> None:
    speech, _ = spoken(SCRIPT)
    event = rooms.at_level(rooms.vocal_event(kind, seed=1), speech, rooms.EVENT_LEVEL_DB[kind])
    event_start = (0.3 * RATE + len(speech) + 0.25 * RATE) / RATE
    event_end = event_start + len(event) / RATE
    take = rooms.mixed(
        _take(_silence(0.3), speech, _silence(0.25), event, _silence(2.5)), rooms.fan(6.0, seed=2), 25.0
    )
    activity = speech_activity(take)
    conditions = recording_conditions(take, activity.regions)

    events = vocal_events(take, activity.regions, conditions.noise_dbfs)
    advice = trim_advice(activity.duration, activity.regions, events, 1.5)

    (cut,) = advice["cuts"]  # the room after the event is still worth trimming
    assert cut["edge"] == "end" and cut["start"] >= event_end - 0.05
    assert advice["content"][1] >= event_end - 0.1 - KEEP_SECONDS


def test_a_steady_hum_in_the_silence_is_no_vocal_event() -> None:
    speech, _ = spoken(SCRIPT)
    hum = 0.02 * rooms.fan(3.0, seed=5)  # mains hum and a fan switching on after the words
    take = _take(_silence(0.3), speech, _silence(0.3), hum)
    take = take + 1e-4 * np.random.default_rng(0).normal(size=len(take))
    activity = speech_activity(take)
    events = vocal_events(take, activity.regions, recording_conditions(take, activity.regions).noise_dbfs)
    assert all(event.end - event.start < 1.5 for event in events)


def test_trim_advice_says_what_it_cuts_and_keeps_events() -> None:
    laugh = VocalEvent(start=3.0, end=3.8, character="voiced", above_floor_db=12.0)

    advice = trim_advice(8.0, [(2.0, 2.9)], [laugh], max_edge_seconds=1.5)

    assert advice["content"] == [2.0, 3.8]
    assert advice["cuts"] == [
        {"edge": "start", "start": 0.0, "end": 1.65, "seconds": 1.65},
        {"edge": "end", "start": 4.15, "end": 8.0, "seconds": 3.85},
    ]
    assert advice["kept_events"] == [laugh.as_dict()]
    assert trim_advice(4.0, [(0.5, 3.5)], [], 1.5)["cuts"] == []
    assert trim_advice(4.0, [], [laugh], 1.5)["cuts"] == []


@pytest.mark.parametrize("kind", ["white", "fan"])
@pytest.mark.parametrize("where", ["end", "start"])
def test_a_breath_under_10_db_of_noise_is_never_trimmed(kind: str, where: str) -> None:
    # given a quiet breath (16 dB under the speech, so 6 dB under the noise) beside the words,
    # then 2.5 s of room: the breath adds a dB or two to its bands for half a second
    for seed in (0, 1, 2):
        speech, _ = spoken(SCRIPT)
        breath = rooms.at_level(
            rooms.vocal_event("breath", seed=seed), speech, rooms.EVENT_LEVEL_DB["breath"]
        )
        if where == "end":
            parts = [_silence(0.4), speech, _silence(0.25), breath, _silence(2.5)]
            breath_start = (len(parts[0]) + len(speech) + len(parts[2])) / RATE
        else:
            parts = [_silence(2.5), breath, _silence(0.25), speech, _silence(0.4)]
            breath_start = 2.5
        breath_end = breath_start + len(breath) / RATE
        take = _take(*parts)
        take = rooms.mixed(take, rooms.NOISES[kind](len(take) / RATE, seed=seed), 10.0)
        activity = speech_activity(take)
        conditions = recording_conditions(take, activity.regions)

        # when trim advice is asked for
        events = vocal_events(take, activity.regions, conditions.noise_dbfs)
        advice = trim_advice(activity.duration, activity.regions, events, 1.5)

        # then the breath is kept: no cut reaches into it
        middle = (breath_start + breath_end) / 2
        assert any(event.start <= middle <= event.end for event in events), (seed, events)
        for cut in advice["cuts"]:
            assert cut["end"] <= breath_start + 0.1 or cut["start"] >= breath_end - 0.1, (seed, cut)


@pytest.mark.parametrize("seed", [2, 3])
def test_babble_at_0_db_reads_under_the_script_checks_line(seed: int) -> None:
    # Babble is speech-like: the VAD hears speech across the whole take, room included, so the
    # noise is read from the take's quietest windows, not its quietest tenth (which read 6 dB high).
    speech, _ = spoken(SCRIPT)
    take = _take(_silence(0.5), speech, _silence(0.5))
    noisy = rooms.mixed(take, rooms.babble(len(take) / RATE, seed=seed), 0.0)
    activity = speech_activity(noisy)
    windows = noise_windows(noisy, activity.regions)
    estimate = recording_conditions(noisy, activity.regions).snr_db
    assert not windows.silence_found
    assert estimate is not None and estimate < MIN_SNR_SCRIPT_DB
    assert len(noise_sample(noisy, activity.regions)) == np.count_nonzero(windows.noise) * 512
