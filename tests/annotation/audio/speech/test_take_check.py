"""The whole take check in a room and around a laugh (issue 39): every flag carries the take's SNR,
a check the noise defeats says so instead of a mismatch, and trim advice never cuts a vocal event."""

from __future__ import annotations

import numpy as np

from annotation.audio import rooms
from annotation.audio.speech.speaker import (
    CLEAN_SNR_DB,
    MIN_SPEECH_SECONDS,
    doubtful_below,
    speaker_embedding,
)
from annotation.audio.speech.take_check import TOO_NOISY, TOO_SHORT, check_take, review_flags
from tests.annotation.audio.speech.espeak import RATE, spoken

SCRIPT = "Please call Stella and ask her to bring these things with her from the store"


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(round(seconds * RATE))


def test_a_take_with_a_laugh_at_the_end_is_not_advised_to_trim_it() -> None:
    # given a reading, a laugh right after it, and a little room tone
    speech, _ = spoken(SCRIPT)
    laugh = rooms.at_level(rooms.vocal_event("laugh", seed=3), speech, rooms.EVENT_LEVEL_DB["laugh"])
    laugh_end = (0.3 * RATE + len(speech) + 0.3 * RATE + len(laugh)) / RATE
    take = np.concatenate([_silence(0.3), speech, _silence(0.3), laugh, _silence(1.1)])
    take = rooms.mixed(take, rooms.fan(len(take) / RATE, seed=1), 30.0)

    # when the take is checked
    check = check_take(take, SCRIPT)

    # then the laugh is content: found, and no trim advice cuts it
    assert check["activity"]["trailing_silence_seconds"] > 1.5  # the VAD alone calls it silence
    (event,) = check["vocal_events"]
    assert event["end"] >= laugh_end - 0.1
    assert not [flag for flag in check["flags"] if flag["kind"] == "trim"]
    assert check["trim"]["cuts"] == []
    assert all(flag["snr_db"] == check["conditions"]["snr_db"] for flag in check["flags"])


def test_at_0_db_the_script_and_the_voice_are_too_noisy_to_check_never_a_mismatch() -> None:
    speech, _ = spoken(SCRIPT)
    enrolled = [speaker_embedding(spoken("The office is closed today.")[0])]
    take = np.concatenate([_silence(0.5), speech, _silence(0.5)])
    noisy = rooms.mixed(take, rooms.babble(len(take) / RATE, seed=2), 0.0)

    check = check_take(noisy, "The office is closed today.", enrolled)  # a wrong sentence, too

    kinds = [flag["kind"] for flag in check["flags"]]
    assert kinds.count(TOO_NOISY) == 2 and "script" not in kinds and "speaker" not in kinds
    assert check["script_check"]["verdict"] == "too_noisy"
    assert check["conditions"]["snr_db"] < 5
    assert review_flags(check) == []


def test_the_speaker_threshold_drops_with_noise() -> None:
    assert doubtful_below(0.7, None) == 0.7
    assert doubtful_below(0.7, CLEAN_SNR_DB + 10) == 0.7
    assert doubtful_below(0.7, CLEAN_SNR_DB - 15) < doubtful_below(0.7, CLEAN_SNR_DB - 5) < 0.7


def test_a_take_too_short_to_check_says_so_with_its_seconds_never_a_voice_mismatch() -> None:
    # given an actor's three accepted takes and two other actors' (the cohort)
    def clean(text: str, voice: str = "en-us") -> np.ndarray:
        return np.concatenate([_silence(0.5), spoken(text, voice=voice)[0], _silence(0.5)])

    references = [clean(text) for text in ("The office is closed today.", SCRIPT, "See you tomorrow.")]
    cohort = [
        [clean(SCRIPT, voice), clean("The office is closed today.", voice)]
        for voice in ("en-us+f3", "en-us+m7")
    ]
    # when another voice reads "five five" (under a second of speech) in a fan's noise
    take = clean("five five", voice="en-us+klatt")
    take = rooms.mixed(take, rooms.fan(len(take) / RATE, seed=2), 15.0)

    check = check_take(take, "five five", same_actor_references=references, cohort_references=cohort)

    # then the voice is too short to check, with the seconds heard: no speaker flag, no review flag
    kinds = [flag["kind"] for flag in check["flags"]]
    assert TOO_SHORT in kinds and "speaker" not in kinds and TOO_NOISY not in kinds
    heard = check["conditions"]["speech_seconds"]
    assert 0.3 < heard < MIN_SPEECH_SECONDS
    (reason,) = [flag["reason"] for flag in check["flags"] if flag["kind"] == TOO_SHORT]
    assert reason == (
        f"Too short to check the voice: {heard:.1f} s of speech heard, the check needs {MIN_SPEECH_SECONDS:.1f} s."
    )
    assert review_flags(check) == []
