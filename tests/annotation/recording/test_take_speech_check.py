"""The speech models in take QC: a take reading another word is flagged by name, sent to review, never
rejected; in a noisy room the voice is compared with the actor's accepted takes heard in that room,
and with other actors' accepted takes heard there too (the cohort), whose actors it never names."""

from __future__ import annotations

import json

import numpy as np
from django.test import Client
from django.urls import reverse

from annotation.audio import rooms
from annotation.audio.speech.speaker import COHORT_SPEAKERS, COHORT_TAKES
from annotation.audio.synthesis import to_wav_bytes
from annotation.recording.models import Take
from annotation.recording.takes import _cohort_references
from tests.annotation.audio.speech.espeak import spoken
from tests.annotation.recording.support import decide, record
from tests.factories import DialogueFactory, ItemFactory, TakeFactory, UserFactory
from webapp.models import User

SCRIPT = "The quick brown fox jumps over the lazy dog near the river bank."


def espeak_wav(text: str) -> bytes:
    samples, _ = spoken(text)
    return to_wav_bytes(np.round(samples * 32767).astype(np.int16), 16_000)


def test_a_take_reading_another_word_is_flagged_by_name_and_still_reviewed(
    users: dict[str, User], review_panel: list[User]
) -> None:
    item = ItemFactory.create(actor=users["actor"], text=SCRIPT)

    take = record(users["actor"], item, espeak_wav(SCRIPT.replace("bank", "house")))

    speech = take.qc["speech"]
    assert speech["script_check"]["verdict"] == "doubtful"
    assert speech["script_check"]["doubtful_words"] == ["bank"]
    assert [flag["kind"] for flag in speech["flags"]] == ["script"]
    assert take.status == Take.Status.IN_REVIEW and take.reviews.count() == 3
    assert take.flagged_for_review
    client = Client()
    client.force_login(users["actor"])
    page = client.get(reverse("annotation:take_detail", args=[take.public_id])).content.decode()
    assert "The take may not say &#x27;bank&#x27; where the script has it." in page


def test_the_right_reading_carries_no_flag_and_its_words_are_timed(
    users: dict[str, User], review_panel: list[User]
) -> None:
    item = ItemFactory.create(actor=users["actor"], text=SCRIPT)

    take = record(users["actor"], item, espeak_wav(SCRIPT))

    speech = take.qc["speech"]
    assert speech["flags"] == [] and not take.flagged_for_review
    assert [word["text"] for word in speech["words"]][:3] == ["the", "quick", "brown"]
    assert 8 < speech["phones_per_second"] < 20
    assert len(speech["speaker_embedding"]) == 256 and speech["speaker_similarity"] is None


def test_a_dialogue_turn_in_another_voice_is_flagged_against_the_other_turns(
    users: dict[str, User], review_panel: list[User]
) -> None:
    # given a dialogue whose first turn was recorded (its take is in review: it stands)
    dialogue = DialogueFactory.create(turns=2, turns__actor=users["actor"])
    first, second = dialogue.turns.order_by("turn")
    first_take = record(users["actor"], first, espeak_wav(first.text))
    assert first_take.qc["speech"]["dialogue_speaker_similarity"] is None  # nothing to compare yet

    # when the second turn is read by another voice
    samples, _ = spoken(second.text, voice="en-us+f4", pitch=85)
    take = record(users["actor"], second, to_wav_bytes(np.round(samples * 32767).astype(np.int16), 16_000))

    # then it is flagged against the dialogue's other turn, and still goes to review
    speech = take.qc["speech"]
    assert speech["dialogue_speaker_similarity"] < 0.7
    assert {
        "kind": "speaker",
        "reason": "The voice sounds unlike the other turns of this dialogue.",
        "snr_db": speech["conditions"]["snr_db"],  # every flag says what it was measured in
    } in speech["flags"]
    assert take.status == Take.Status.IN_REVIEW and take.flagged_for_review


def test_a_dialogue_turn_in_the_same_voice_is_not_flagged(
    users: dict[str, User], review_panel: list[User]
) -> None:
    dialogue = DialogueFactory.create(turns=2, turns__actor=users["actor"])
    first, second = dialogue.turns.order_by("turn")
    record(users["actor"], first, espeak_wav(first.text))

    take = record(users["actor"], second, espeak_wav(second.text))

    assert take.qc["speech"]["dialogue_speaker_similarity"] > 0.7
    assert not any(flag["kind"] == "speaker" for flag in take.qc["speech"]["flags"])


def accept_three_takes(actor: User) -> None:
    """Record three clean takes as `actor` and have the review panel accept each."""
    for text in (
        "The office is closed today.",
        SCRIPT,
        "My brother lost his keys on the way home from work.",
    ):
        accepted = record(actor, ItemFactory.create(actor=actor, text=text), espeak_wav(text))
        assert decide(accepted, "accept", "accept", "accept")[-1] == "accepted"


def own_and_other_voice_takes(actor: User, line: str, room: str) -> tuple[Take, Take]:
    """Return two takes of `line` recorded by `actor` at 10 dB of `room`, in this order: one in the
    actor's own eSpeak voice (en-us), one in another (en-us+f3)."""
    own, other = (
        record(actor, ItemFactory.create(actor=actor, text=line), noisy_wav(line, voice, room, 10))
        for voice in ("en-us", "en-us+f3")
    )
    return own, other


def noisy_wav(text: str, voice: str, kind: str, snr_db: float) -> bytes:
    samples, _ = spoken(text, voice=voice)
    pad = np.zeros(8_000)
    take = np.concatenate([pad, samples, pad])
    take = rooms.mixed(take, rooms.NOISES[kind](len(take) / 16_000, seed=4), snr_db)
    return to_wav_bytes(np.round(take * 32767).astype(np.int16), 16_000)


def test_in_a_noisy_room_another_voice_is_flagged_against_the_actors_accepted_takes_and_their_own_is_not(
    users: dict[str, User], review_panel: list[User]
) -> None:
    # given three accepted takes of the actor, recorded clean
    accept_three_takes(users["actor"])
    line = "Could you tell me where the nearest train station is?"

    # when a take in the actor's voice and one in another voice arrive, both at 10 dB of white noise
    own, other = own_and_other_voice_takes(users["actor"], line, "white")

    # then both were compared with the accepted takes heard in their room, on the actor's own line,
    # and only the other voice is flagged
    for take in (own, other):
        speech = take.qc["speech"]
        assert speech["speaker_references_in_take_room"] and speech["speaker_threshold_calibrated"]
        assert 5 < speech["conditions"]["snr_db"] < 15
    assert not any(flag["kind"] == "speaker" for flag in own.qc["speech"]["flags"])
    assert own.qc["speech"]["speaker_similarity"] >= own.qc["speech"]["speaker_threshold"]
    assert {
        "kind": "speaker",
        "reason": "The voice sounds unlike this actor's accepted takes.",
        "snr_db": other.qc["speech"]["conditions"]["snr_db"],
    } in other.qc["speech"]["flags"], (
        other.qc["speech"]["speaker_similarity"],
        other.qc["speech"]["speaker_threshold"],
    )
    assert other.flagged_for_review and other.status == Take.Status.IN_REVIEW


def voice_wav(text: str, voice: str) -> bytes:
    samples, _ = spoken(text, voice=voice)
    return to_wav_bytes(np.round(samples * 32767).astype(np.int16), 16_000)


def test_the_cohort_is_a_few_other_actors_accepted_takes(users: dict[str, User]) -> None:
    # given the actor's own accepted take, five other actors' accepted takes (three each), and a
    # sixth actor's take still in review
    own = TakeFactory.create(actor=users["actor"], status=Take.Status.ACCEPTED)
    for _ in range(5):
        person = UserFactory.create()
        for _ in range(3):
            TakeFactory.create(actor=person, status=Take.Status.ACCEPTED)
    TakeFactory.create(actor=UserFactory.create(), status=Take.Status.IN_REVIEW)

    cohort = _cohort_references(TakeFactory.create(actor=users["actor"]))

    # then COHORT_SPEAKERS voices of COHORT_TAKES takes each: never the actor's own, never a take
    # still in review; samples only
    assert len(cohort) == COHORT_SPEAKERS
    assert all(len(voice) == COHORT_TAKES for voice in cohort)
    assert all(isinstance(samples, np.ndarray) and samples.ndim == 1 for voice in cohort for samples in voice)
    assert own.actor_id == users["actor"].pk


def test_the_worker_hears_other_actors_as_the_cohort_and_names_none_of_them(
    users: dict[str, User], review_panel: list[User]
) -> None:
    # given three accepted takes of the actor and two of each of three other actors
    for text in (
        "The office is closed today.",
        SCRIPT,
        "My brother lost his keys on the way home from work.",
    ):
        TakeFactory.create(actor=users["actor"], status=Take.Status.ACCEPTED, wav=espeak_wav(text))
    others = [UserFactory.create() for _ in range(3)]
    for person, voice in zip(others, ("en-us+m7", "en-us+klatt", "en-us+belinda"), strict=True):
        for text in ("The office is closed today.", SCRIPT):
            TakeFactory.create(actor=person, status=Take.Status.ACCEPTED, wav=voice_wav(text, voice))
    line = "Could you tell me where the nearest train station is?"

    # when a take in the actor's voice and one in another voice arrive, both in 10 dB of babble
    own, other = own_and_other_voice_takes(users["actor"], line, "babble")

    # then both were scored against the three other actors' voices: only the other voice is flagged
    for take in (own, other):
        assert take.qc["speech"]["speaker_cohort_size"] == 3
    assert own.qc["speech"]["speaker_cohort_score"] >= own.qc["speech"]["speaker_cohort_margin"]
    assert not any(flag["kind"] == "speaker" for flag in own.qc["speech"]["flags"])
    assert other.qc["speech"]["speaker_cohort_score"] < other.qc["speech"]["speaker_cohort_margin"]
    assert {
        "kind": "speaker",
        "reason": "The voice sounds unlike this actor's accepted takes.",
        "snr_db": other.qc["speech"]["conditions"]["snr_db"],
    } in other.qc["speech"]["flags"]
    # and the stored check names no cohort actor: how many voices, never whose
    stored = json.dumps([own.qc, other.qc])
    assert not any(person.username in stored for person in others)
    cohort = {key: value for key, value in other.qc["speech"].items() if key.startswith("speaker_cohort")}
    assert set(cohort) == {"speaker_cohort_score", "speaker_cohort_margin", "speaker_cohort_size"}
    assert all(isinstance(value, int | float) for value in cohort.values())


def test_a_take_too_short_for_the_voice_check_says_so_on_the_take_page_and_is_not_flagged(
    users: dict[str, User], review_panel: list[User]
) -> None:
    # given three accepted takes of the actor
    accept_three_takes(users["actor"])

    # when another voice reads "five five" (under a second of speech) in a fan's noise
    take = record(
        users["actor"],
        ItemFactory.create(actor=users["actor"], text="Five five."),
        noisy_wav("Five five.", "en-us+f3", "fan", 15),
    )

    # then the stored check says the voice is too short to check, with the seconds heard, and the
    # take is not flagged for review on its voice
    speech = take.qc["speech"]
    heard = speech["conditions"]["speech_seconds"]
    assert heard < 1.0
    reason = f"Too short to check the voice: {heard:.1f} s of speech heard, the check needs 1.0 s."
    assert {"kind": "too_short", "reason": reason, "snr_db": speech["conditions"]["snr_db"]} in speech[
        "flags"
    ]
    assert not any(flag["kind"] == "speaker" for flag in speech["flags"])
    assert not take.flagged_for_review
    client = Client()
    client.force_login(users["actor"])
    page = client.get(reverse("annotation:take_detail", args=[take.public_id])).content.decode()
    assert reason in page
    assert f"too short to check ({heard:.1f} s of speech)" in page
