"""factory_boy factories for the object graphs tests build: users by role, items with their takes
(real WAV bytes), reviews, annotations, gold references, systems, model outputs, judges, judgements.

Defaults make a valid, plain object; a test names only the fields its behaviour depends on. Related
objects go through `<name>__<field>` (``RecordedItemFactory.create(recording__actor=actor)``), and passing
``None`` for a related declaration skips it (``RecordedItemFactory.create(recording=None)``: no take).
Area support modules subclass these with the data of their scenario (for example
tests/annotation/labelling/support.py's sarcastic, recorded script).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import factory
import numpy as np
from factory.django import DjangoModelFactory, Password

from annotation.audio.synthesis import to_wav_bytes
from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from annotation.recording.consent.models import SCOPES, ConsentRecord, ConsentText
from annotation.recording.models import Dialogue, Item, Review, Take
from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.outputs.models import ModelOutput, System
from tests.annotation.audio.audio_corpus import glide, harmonic_tone, wav_of
from webapp.lib import vocabulary
from webapp.models import User
from webapp.roles import Role, grant_role
from webapp.storage import new_media_key, save_media

TEST_PASSWORD = "pw-for-tests-123"
# A port nothing listens on: judges built here fail fast unless a test points them at a fake server.
UNREACHABLE_JUDGE_URL = "http://127.0.0.1:9/v1"


@cache
def speech_like_wav() -> bytes:
    """Return 1.5 s of a voice-like tone gliding 220 -> 260 -> 180 Hz as 16 kHz mono 16-bit WAV."""
    return wav_of(harmonic_tone(glide(220.0, 260.0, 180.0, seconds=1.5)))


def tiny_wav(seconds: float = 0.05, frequency: float = 220.0) -> bytes:
    """Return a short real WAV (a sine) to stand for a spoken response."""
    t = np.arange(round(seconds * 16_000)) / 16_000
    return to_wav_bytes((8000 * np.sin(2 * np.pi * frequency * t)).astype(np.int16), 16_000)


def stored_wav(data: bytes, kind: str = "take") -> str:
    """Save WAV bytes as media under a fresh random key and return the key."""
    return save_media(new_media_key(kind, "wav"), data)


def consent_to_everything(person: User) -> ConsentRecord:
    """Give `person` consent to every scope under the current text (as the consent page would)."""
    ConsentRecord.objects.filter(person=person, is_current=True).update(is_current=False)
    return ConsentRecord.objects.create(
        person=person, text=ConsentText.current(), **dict.fromkeys(SCOPES, True)
    )


class UserFactory(DjangoModelFactory[User]):
    """A user who can log in with TEST_PASSWORD; ``role=Role.X`` grants that role."""

    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = Password(TEST_PASSWORD)

    @factory.post_generation
    def role(user: User, create: bool, extracted: Any, **kwargs: Any) -> None:
        if extracted is not None:
            grant_role(user, extracted)
        if extracted == Role.VOICE_ACTOR and kwargs.get("consent", True):
            # Actors consent before their first take (the record page asks); ``role__consent=False``
            # makes one who has not yet.
            consent_to_everything(user)


class ItemFactory(DjangoModelFactory[Item]):
    """A scripted item; given an actor it is assigned to them and open for recording."""

    class Meta:
        model = Item
        skip_postgeneration_save = True

    # Not the EE-0001 style of real ids, so a generated id never collides with one a test spells out.
    external_id = factory.Sequence(lambda n: f"item-{n:05d}")
    text = "I finally finished the marathon. My legs are still shaking."
    scenario = vocabulary.IMPLICIT
    target_emotion = vocabulary.HAPPY
    emotion_variant = "pride"
    target_intensity = vocabulary.MEDIUM
    instructions = "Warm, smiling voice."
    actor = None
    state = factory.LazyAttribute(lambda item: Item.State.RECORDING if item.actor else Item.State.SCRIPTED)


class DialogueFactory(DjangoModelFactory[Dialogue]):
    """A dialogue with `turns` user turns (default 3; each an item), all given to `actor` when one is named.

    The trajectory shifts from sad to fear to happy and onwards; each turn has a reference reply.
    """

    class Meta:
        model = Dialogue
        skip_postgeneration_save = True

    external_id = factory.Sequence(lambda n: f"dlg-{n:05d}")
    topic = "losing a job"
    voice = "en-us"

    @factory.post_generation
    def turns(dialogue: Dialogue, create: bool, extracted: Any, **kwargs: Any) -> None:
        count = 3 if extracted is None else extracted
        arc = [vocabulary.SAD, vocabulary.FEAR, vocabulary.HAPPY, vocabulary.NEUTRAL, vocabulary.SURPRISE]
        for turn in range(1, count + 1):
            ItemFactory.create(
                dialogue=dialogue,
                turn=turn,
                external_id=Dialogue.turn_external_id(dialogue.external_id, turn),
                text=f"Turn {turn} of what happened after I lost my job.",
                target_emotion=arc[(turn - 1) % len(arc)],
                split=dialogue.split,
                expected_strategy="emotional validation",
                reference_reply=f"That sounds hard; tell me more about turn {turn}.",
                **kwargs,
            )


class TakeFactory(DjangoModelFactory[Take]):
    """A take of an item, its audio (``wav``, real bytes) stored under a random key, not yet analysed."""

    class Meta:
        model = Take
        skip_postgeneration_save = True

    class Params:
        wav = factory.LazyFunction(speech_like_wav)

    item = factory.SubFactory(ItemFactory)
    actor = factory.SubFactory(UserFactory)
    audio_key = factory.LazyAttribute(lambda take: stored_wav(take.wav))
    original_key = factory.SelfAttribute("audio_key")


class RecordingFactory(TakeFactory):
    """An accepted take that has become its item's recording."""

    status = Take.Status.ACCEPTED

    @factory.post_generation
    def becomes_the_recording(take: Take, create: bool, extracted: Any, **kwargs: Any) -> None:
        take.item.recording = take
        take.item.save(update_fields=["recording"])


class RecordedItemFactory(ItemFactory):
    """A recorded item whose accepted take is its recording (``recording=None``: state only, no take)."""

    state: Any = Item.State.RECORDED  # Any: subclasses may make it a declaration
    recording = factory.RelatedFactory(RecordingFactory, factory_related_name="item")


class ReviewFactory(DjangoModelFactory[Review]):
    """A reviewer's open review of a take."""

    class Meta:
        model = Review

    take = factory.SubFactory(TakeFactory, status=Take.Status.IN_REVIEW)
    reviewer = factory.SubFactory(UserFactory)


class AnnotationFactory(DjangoModelFactory[Annotation]):
    """An annotator's assignment to label an item (nothing labelled yet)."""

    class Meta:
        model = Annotation

    item = factory.SubFactory(RecordedItemFactory)
    annotator = factory.SubFactory(UserFactory)


class GoldReferenceFactory(DjangoModelFactory[GoldReference]):
    """Version 1 of an item's gold reference; perception and ToM default to empty documents."""

    class Meta:
        model = GoldReference

    item = factory.SubFactory(RecordedItemFactory)
    version = 1
    perception = factory.LazyFunction(dict)
    tom = factory.LazyFunction(dict)


class SystemFactory(DjangoModelFactory[System]):
    """A system under evaluation."""

    class Meta:
        model = System

    name = factory.Sequence(lambda n: f"System-{n}")


class ModelOutputFactory(DjangoModelFactory[ModelOutput]):
    """A system's structured answer to an item; spoken (a short real WAV) unless the system is text-only."""

    class Meta:
        model = ModelOutput

    system = factory.SubFactory(SystemFactory)
    item = factory.SubFactory(ItemFactory)
    benchmark_version = "echoeval-v1"
    perception_text = "The user sounds sad and lonely."
    reasoning_text = "Context: alone\nLatent need: company\nCore demand: be heard"
    reasoning_fields = factory.LazyFunction(
        lambda: {
            "context": "alone",
            "latent_need": "company",
            "core_demand": "be heard",
            "strategy": ["emotional validation"],
        }
    )
    strategy_text = "Strategies: emotional validation"
    response_text = "I'm sorry you ate alone. Want to talk?"
    response_audio_key = factory.LazyAttribute(
        lambda output: "" if output.system.text_only else stored_wav(tiny_wav(), "model_output")
    )


class JudgeConfigFactory(DjangoModelFactory[JudgeConfig]):
    """A judge endpoint; by default one that answers nothing (UNREACHABLE_JUDGE_URL)."""

    class Meta:
        model = JudgeConfig

    name = factory.Sequence(lambda n: f"judge-{n}")
    base_url = UNREACHABLE_JUDGE_URL


class JudgementFactory(DjangoModelFactory[Judgement]):
    """A stored judgement with a given final score; ``score=None`` stores a judge error."""

    class Meta:
        model = Judgement

    output = factory.SubFactory(ModelOutputFactory)
    stage = "perception"
    judge_config = factory.SubFactory(JudgeConfigFactory)
    judge_model = "fixture"
    prompt_version = "v1"
    prompt_key = factory.LazyAttribute(lambda judgement: f"{judgement.output.pk}-{judgement.stage}")
    score = None
    raw_sum = factory.SelfAttribute("score")
    error_kind = factory.LazyAttribute(
        lambda judgement: "" if judgement.score is not None else Judgement.ErrorKind.INVALID_JSON
    )
    error = factory.LazyAttribute(
        lambda judgement: "" if judgement.score is not None else "answer is not a JSON object"
    )
    raw_text = factory.LazyAttribute(lambda judgement: "{}" if judgement.score is not None else "garbage")
