"""Builders for listening-study tests: recorded items, systems with spoken outputs, quick raters."""

from __future__ import annotations

import io
import wave
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from django.utils import timezone

from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.recording.models import Item
from evaluation.outputs.models import ModelOutput, System
from evaluation.studies.creation.items import StudySpec, create_study
from evaluation.studies.models import Study, StudyAssignment, StudyStimulus
from evaluation.studies.workflows import record_playback, submit_rating
from tests.factories import ModelOutputFactory, RecordedItemFactory, SystemFactory, stored_wav
from tests.support.listening import listen
from webapp.lib import vocabulary
from webapp.lib.vocabulary import SCENARIOS
from webapp.models import User
from webapp.roles import Role

QUERY_SPEECH = "I lost my job today."
REPLY_SPEECH = "I am so sorry."


@lru_cache(maxsize=4)
def spoken(text: str) -> bytes:
    """Return WAV bytes of real synthetic speech, synthesised once per test session."""
    speech = synthesize(text, rate_wpm=300)
    return to_wav_bytes(speech.samples, speech.sample_rate)


def wav_seconds(data: bytes) -> float:
    """Return the length of WAV bytes in seconds."""
    with wave.open(io.BytesIO(data)) as wav:
        return wav.getnframes() / wav.getframerate()


@dataclass
class StudyWorld:
    items: list[Item]
    systems: list[System]
    outputs: list[ModelOutput]


def build_world(
    make_user: Callable[..., User], n_systems: int = 2, n_items: int = 4, prefix: str = "T"
) -> StudyWorld:
    """Create recorded items (scenarios in turn) and systems whose outputs are short real speech."""
    actor = make_user(Role.VOICE_ACTOR)
    query_audio, reply_audio = spoken(QUERY_SPEECH), spoken(REPLY_SPEECH)
    items = [
        RecordedItemFactory.create(
            external_id=f"{prefix}-{n:03d}",
            text=f"Query number {n}: I lost my job today.",
            scenario=SCENARIOS[n % len(SCENARIOS)],
            target_emotion=vocabulary.SAD,
            emotion_variant="",
            instructions="",
            recording__actor=actor,
            recording__wav=query_audio,
        )
        for n in range(n_items)
    ]
    systems = [SystemFactory.create(name=f"SecretSystem{chr(65 + n)}") for n in range(n_systems)]
    outputs = [
        ModelOutputFactory.create(
            system=system,
            item=item,
            response_text=f"I am sorry to hear that ({item.external_id}).",
            response_audio_key=stored_wav(reply_audio, "output"),
        )
        for system in systems
        for item in items
    ]
    return StudyWorld(items=items, systems=systems, outputs=outputs)


def make_study(world: StudyWorld, evaluators: list[User], admin: User, **overrides: object) -> Study:
    """Create a study over the world with small defaults (overridable field by field)."""
    spec: dict[str, object] = {
        "name": "Pilot study",
        "instructions": "Listen, then rate.",
        "systems": world.systems,
        "evaluators": evaluators,
        "items_per_system": 2,
        "ratings_per_output": len(evaluators),
        "training_count": 1,
        "trap_count": 1,
        "seed": 5,
    }
    spec.update(overrides)
    return create_study(StudySpec(**spec), created_by=admin)  # type: ignore[arg-type]


def current(study: Study, evaluator: User) -> StudyAssignment:
    """Return the evaluator's next assignment, which the test expects to exist."""
    assignment = StudyAssignment.objects.next_for(study, evaluator)
    assert assignment is not None, "the evaluator has rated everything already"
    return assignment


def from_system(stimulus: StudyStimulus, letter: str) -> bool:
    """Return True when the stimulus answers for SecretSystem<letter>."""
    return stimulus.system is not None and stimulus.system.name == f"SecretSystem{letter}"


def play(assignment: StudyAssignment) -> None:
    """Mark the assignment as shown (and its audio fetched whole) long enough ago, and its playback
    as recorded."""
    listen(assignment.evaluator, assignment.stimulus.audio_key)
    assignment.presented_at = timezone.now() - timedelta(seconds=assignment.stimulus.audio_seconds + 1)
    assignment.save(update_fields=["presented_at"])
    record_playback(assignment)


def rate_everything(study: Study, evaluator: User, score_for: Callable[[StudyAssignment, str], int]) -> None:
    """Rate all of the evaluator's assignments in order, scores chosen by score_for(assignment, dimension)."""
    for assignment in (
        study.assignments.filter(evaluator=evaluator).select_related("stimulus").order_by("position")
    ):
        play(assignment)
        submit_rating(assignment.pk, {key: score_for(assignment, key) for key in study.dimensions})
