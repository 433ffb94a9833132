"""The same eSpeak voice scores above another voice; in a noisy room the actor's references are heard
in that room and the line is the actor's own; other actors' voices heard there are the cohort a
take must sound nearer its actor than, once what every voice heard in that room shares is taken
out (issue 39)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio import rooms
from annotation.audio.speech import speaker
from annotation.audio.speech.activity import speech_activity
from annotation.audio.speech.conditions import noise_sample, recording_conditions
from annotation.audio.speech.speaker import (
    CALIBRATION_MARGIN,
    CLEAN_SNR_DB,
    COHORT_MARGIN,
    COHORT_MARGIN_PER_DB,
    MAX_THRESHOLD,
    MIN_THRESHOLD,
    SpeakerCheck,
    apart_cohort_score,
    apart_from,
    calibrated_threshold,
    check_speaker,
    clean_embedding,
    cohort_margin,
    cohort_score,
    shared_voice,
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


def _snr(take: np.ndarray) -> float | None:
    return recording_conditions(take, speech_activity(take).regions).snr_db


def _check(
    take: np.ndarray, references: list[np.ndarray], cohort: list[list[np.ndarray]] | None = None
) -> SpeakerCheck:
    regions = speech_activity(take).regions
    snr = recording_conditions(take, regions).snr_db
    check = check_speaker(
        speaker_embedding(take), references, noise_sample(take, regions), snr, cohort=cohort or []
    )
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


LINE = "We will meet again tomorrow morning at the station by the old clock tower"
COHORT_VOICES = ("en-us+m7", "en-us+klatt", "en-us+belinda")


@pytest.mark.parametrize(("kind", "voice"), [("white", "en-us+f1"), ("babble", "en-us+Andy")])
def test_with_a_cohort_another_voice_in_noise_is_flagged_and_the_actors_own_is_not(
    kind: str, voice: str
) -> None:
    # given an actor's three clean accepted takes, and two of each of three other actors
    references = [np.concatenate([np.zeros(RATE // 2), spoken(text)[0]]) for text in SENTENCES]
    cohort = [[spoken(text, voice=other)[0] for text in SENTENCES[:2]] for other in COHORT_VOICES]

    # when a take of another line is checked at 10 dB, in the actor's voice and in another voice
    own_take = _in_room(spoken(LINE)[0], kind, 10.0)
    other_take = _in_room(spoken(LINE, voice=voice)[0], kind, 10.0)
    own, other = _check(own_take, references, cohort), _check(other_take, references, cohort)

    # then both were scored against the three other voices heard in their room: the actor's own
    # voice leads the closest of them by the margin, the other voice does not
    assert own.cohort_size == other.cohort_size == 3
    assert own.cohort_score is not None and other.cohort_score is not None
    assert own.cohort_score >= own.cohort_margin and not own.doubtful
    assert other.cohort_score < other.cohort_margin and other.doubtful
    # the margin is the clean one less COHORT_MARGIN_PER_DB for each dB of noise under CLEAN_SNR_DB
    own_snr = _snr(own_take)
    assert own_snr is not None and own_snr < CLEAN_SNR_DB
    assert own.cohort_margin == pytest.approx(cohort_margin(own_snr))
    if voice == "en-us+Andy":  # a voice near the actor's: the actor's own line alone passes it
        assert not _check(other_take, references).doubtful


def test_without_enough_cohort_voices_the_actors_own_line_decides() -> None:
    references = [np.concatenate([np.zeros(RATE // 2), spoken(text)[0]]) for text in SENTENCES]
    take = _in_room(spoken(LINE)[0], "fan", 10.0)
    one_voice = [[spoken(SENTENCES[0], voice="en-us+m7")[0]]]

    alone, with_one = _check(take, references), _check(take, references, one_voice)

    assert alone.cohort_score is None and alone.cohort_size == 0
    assert with_one.cohort_score is None and with_one.cohort_size == 1  # under MIN_COHORT: not used
    assert with_one.similarity == alone.similarity and with_one.threshold == alone.threshold
    assert not with_one.doubtful


def test_the_cohort_score_is_the_lead_over_the_closest_voice_and_either_rule_flags() -> None:
    assert cohort_score(0.9, [0.6, 0.8, 0.7]) == pytest.approx(0.1)
    assert cohort_score(0.9, [0.6, 0.8, 0.7], top=2) == pytest.approx(0.15)
    assert cohort_margin(None) == COHORT_MARGIN == cohort_margin(CLEAN_SNR_DB + 5)
    assert cohort_margin(10.0) == pytest.approx(COHORT_MARGIN - 15 * COHORT_MARGIN_PER_DB)
    # a lead under the margin flags a voice above the line; under the line flags whatever the lead
    assert SpeakerCheck(0.85, 0.7, True, True, cohort_score=0.01, cohort_margin=0.05, cohort_size=3).doubtful
    assert SpeakerCheck(0.65, 0.7, True, True, cohort_score=0.2, cohort_margin=0.05, cohort_size=3).doubtful
    assert not SpeakerCheck(
        0.85, 0.7, True, True, cohort_score=0.2, cohort_margin=0.05, cohort_size=3
    ).doubtful


def test_what_the_rooms_voices_share_does_not_count_towards_the_lead() -> None:
    # given an actor's voice, two cohort voices and a take of the actor's voice (unit axes 0-3)
    axes = np.eye(5)
    actor, first, second = axes[0], axes[1], axes[2]
    take = 0.8 * axes[0] + 0.6 * axes[3]
    quiet = apart_cohort_score(take.tolist(), [actor.tolist()], [[first.tolist()], [second.tolist()]])

    # when a room (axis 4) is heard in every one of them, as loud as the voices twice over
    def heard(vector: np.ndarray) -> list[float]:
        return (vector + 2.0 * axes[4]).tolist()

    plain_quiet = cohort_score(similarity(take, actor), [similarity(take, first), similarity(take, second)])
    plain_loud = cohort_score(
        similarity(heard(take), heard(actor)),
        [similarity(heard(take), heard(first)), similarity(heard(take), heard(second))],
    )
    loud = apart_cohort_score(heard(take), [heard(actor)], [[heard(first)], [heard(second)]])

    # then the plain lead over the closest voice shrinks to under a third, the lead with what the
    # voices share taken out stays (the room's part is the same in every unit embedding)
    assert plain_loud < plain_quiet / 3
    assert loud == pytest.approx(quiet, abs=0.01)
    assert loud > plain_loud + 0.3
    # what they share is the mean of their unit embeddings, and is taken from each
    shared = shared_voice([heard(actor), heard(first)])
    assert shared[4] == pytest.approx(2.0 / np.sqrt(5.0))
    assert apart_from(heard(actor), shared)[4] == pytest.approx(0.0)


def test_a_clean_reference_is_embedded_once_per_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def counted(samples: np.ndarray) -> list[float]:
        calls.append(len(samples))
        return [1.0] + [0.0] * 255

    monkeypatch.setattr(speaker, "speaker_embedding", counted)
    samples = np.random.default_rng(7).normal(0.0, 0.1, RATE)
    assert clean_embedding(samples) == clean_embedding(samples.copy())
    clean_embedding(samples[:-1])
    assert calls == [RATE, RATE - 1]
