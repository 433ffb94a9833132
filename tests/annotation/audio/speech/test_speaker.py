"""The same eSpeak voice scores above another voice; in a noisy room the actor's references are heard
in that room and the line is the actor's own (issue 39)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio import rooms
from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.conditions import noise_sample, recording_conditions
from annotation.audio.speech.speaker import (
    CALIBRATION_MARGIN,
    MAX_THRESHOLD,
    MIN_THRESHOLD,
    SpeakerCheck,
    calibrated_threshold,
    check_speaker,
    similarity,
    similarity_to,
    speaker_embedding,
)
from tests.annotation.audio.speech.espeak import RATE, SENTENCES, spoken


def test_the_same_voice_scores_above_another_voice() -> None:
    voice_a = [speaker_embedding(spoken(text, voice="en-us")[0]) for text in SENTENCES]
    other = speaker_embedding(spoken(SENTENCES[0], voice="en-us+f3", pitch=70)[0])
    same = similarity(voice_a[0], voice_a[1])
    assert same > similarity(voice_a[0], other) + 0.05
    assert similarity_to(voice_a[2], voice_a[:2]) > similarity_to(other, voice_a[:2])  # type: ignore[operator]
    assert similarity_to(other, []) is None
    assert len(voice_a[0]) == 256


def _in_room(samples: np.ndarray, kind: str, snr_db: float, seed: int = 5) -> np.ndarray:
    pad = np.zeros(RATE // 2)
    take = np.concatenate([pad, samples, pad])
    return rooms.mixed(take, rooms.NOISES[kind](len(take) / RATE, seed=seed), snr_db)


def _check(take: np.ndarray, references: list[np.ndarray]) -> SpeakerCheck:
    regions = speech_activity(take).regions
    snr = recording_conditions(take, regions).snr_db
    check = check_speaker(speaker_embedding(take), references, noise_sample(take, regions), snr)
    assert check is not None
    return check


@pytest.mark.parametrize("kind", ["white", "fan"])
def test_at_10_db_another_voice_is_flagged_and_the_actors_own_is_not(kind: str) -> None:
    # given an actor's three clean accepted takes (eSpeak NG's default voice)
    references = [np.concatenate([np.zeros(RATE // 2), spoken(text)[0]]) for text in SENTENCES]
    line = "We will meet again tomorrow morning at the station by the old clock tower"

    # when a take of another line is checked at 10 dB, in the actor's voice and in another voice
    own = _check(_in_room(spoken(line)[0], kind, 10.0), references)
    other = _check(_in_room(spoken(line, voice="en-us+f1")[0], kind, 10.0), references)

    # then the references were heard in the take's room, on the actor's own line, and only the
    # other voice is doubtful (against clean references the actor's own voice falls as far)
    assert own.in_take_room and own.calibrated and other.in_take_room
    assert not own.doubtful
    assert other.doubtful
    clean_references = [speaker_embedding(reference) for reference in references]
    own_take = _in_room(spoken(line)[0], kind, 10.0)
    assert similarity_to(speaker_embedding(own_take), clean_references) < own.similarity  # type: ignore[operator]


def test_the_line_is_the_actors_own_spread_and_needs_three_references() -> None:
    steady = [[1.0, 0.0, 0.0], [0.99, 0.1, 0.0], [0.99, 0.0, 0.1]]
    varied = [[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.8, 0.0, 0.6]]
    scattered = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    steady_line, varied_line = calibrated_threshold(steady), calibrated_threshold(varied)
    assert steady_line is not None and varied_line is not None
    # each reference against the others' mean, the lowest, less the margin
    each = [similarity_to(steady[i], [o for j, o in enumerate(steady) if j != i]) for i in range(3)]
    assert steady_line == pytest.approx(min(v for v in each if v is not None) - CALIBRATION_MARGIN)
    assert MIN_THRESHOLD < varied_line < steady_line <= MAX_THRESHOLD  # a varied actor: a lower line
    assert calibrated_threshold(scattered) == MIN_THRESHOLD
    assert calibrated_threshold(steady[:2]) is None


def test_a_clean_take_compares_references_as_they_are() -> None:
    references = [spoken(text)[0] for text in SENTENCES]
    take = np.concatenate([np.zeros(RATE // 2), spoken("The office is closed today")[0], np.zeros(RATE // 2)])
    check = _check(take, references)
    assert not check.in_take_room and check.calibrated and not check.doubtful
    assert check_speaker([1.0] * 256, [], np.zeros(0), None) is None
