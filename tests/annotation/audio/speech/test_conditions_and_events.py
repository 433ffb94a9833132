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


def test_the_speech_heard_counts_a_short_reading_not_the_babble_around_it() -> None:
    # "five five" (under a second) with a second of room: in babble the VAD hears speech throughout
    speech, _ = spoken("five five")
    take = _take(_silence(0.5), speech, _silence(0.5))
    clean = recording_conditions(take, speech_activity(take).regions)
    noisy = rooms.mixed(take, rooms.babble(len(take) / RATE, seed=4), 10.0)
    regions = speech_activity(noisy).regions

    heard = recording_conditions(noisy, regions).speech_seconds

    assert abs(clean.speech_seconds - len(speech) / RATE) < 0.15
    assert sum(end - start for start, end in regions) > len(speech) / RATE + 0.5  # the VAD's own count
    assert 0.3 < heard < len(speech) / RATE + 0.2


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


def test_made_deliveries_shout_into_clipping_shift_the_voice_and_lose_the_pitch() -> None:
    speech, _ = spoken(SCRIPT)
    shouted = rooms.delivered(speech, "shouted")
    assert np.mean(np.abs(shouted) >= 1.0) > 0.01  # the peaks clip
    assert len(rooms.delivered(speech, "child-like")) < 0.85 * len(speech)  # faster and higher
    elderly = rooms.delivered(speech, "elderly-like")
    assert len(elderly) > 1.1 * len(speech)  # slower and lower

    def voicing(samples: np.ndarray) -> float:
        frames = samples[: len(samples) // 640 * 640].reshape(-1, 640)
        loud = frames[np.mean(frames**2, axis=1) > 0.1 * np.max(np.mean(frames**2, axis=1))]
        peaks = []
        for frame in loud:
            corr = np.correlate(frame, frame, "full")[639:]
            peaks.append(np.max(corr[27:230]) / max(corr[0], 1e-12))  # a 70-600 Hz period
        return float(np.median(peaks))

    whisper = rooms.delivered(speech, "whisper-like", seed=2)
    assert voicing(whisper) < voicing(speech) - 0.2
    assert np.mean(whisper**2) == pytest.approx(np.mean(speech**2), rel=0.05)
    with pytest.raises(ValueError):
        rooms.delivered(speech, "sung")


def test_made_crying_breaks_the_phrasing_and_sobs_and_anger_is_faster_louder_and_brighter() -> None:
    speech, _ = spoken(SCRIPT)
    crying = rooms.delivered(speech, "crying", seed=1)
    assert len(speech) + 0.3 * 16_000 <= len(crying) <= len(speech) + 0.7 * 16_000  # two pauses put in
    assert np.array_equal(crying, rooms.delivered(speech, "crying", seed=1))  # seeded

    # the level sobs: on a steady vowel-like tone the 20 ms windows' level swings by half
    tone = 0.3 * np.sin(2 * np.pi * 180.0 * np.arange(2 * 16_000) / 16_000)
    sobbing = rooms.delivered(tone, "crying", seed=1)
    frames = sobbing[: len(sobbing) // 320 * 320].reshape(-1, 320)
    level = np.sqrt(np.mean(frames**2, axis=1))
    voiced = level[level > 0.05 * np.max(level)]  # the pauses put in left out
    assert np.percentile(voiced, 10) < 0.6 * np.percentile(voiced, 90)

    angry = rooms.delivered(speech, "angry")
    assert len(angry) < 0.95 * len(speech)  # faster
    assert np.sqrt(np.mean(angry**2)) > 1.5 * np.sqrt(np.mean(speech**2))  # louder

    def high_share(samples: np.ndarray) -> float:
        spectrum = np.abs(np.fft.rfft(samples)) ** 2
        frequencies = np.fft.rfftfreq(len(samples), 1 / 16_000)
        return float(spectrum[frequencies > 2_000].sum() / spectrum.sum())

    assert high_share(angry) > 1.5 * high_share(speech)  # brighter
