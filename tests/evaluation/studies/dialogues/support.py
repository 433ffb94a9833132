"""Builders for dialogue-study tests: recorded dialogues, systems with a spoken reply per turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from annotation.recording.models import Dialogue, Item
from evaluation.outputs.models import ModelOutput, System
from evaluation.studies.creation.items import StudySpec, create_study
from evaluation.studies.models import Study, StudyAssignment, StudyTurn
from evaluation.studies.workflows import record_turn_playback, submit_turn_rating
from tests.evaluation.studies.support import QUERY_SPEECH, REPLY_SPEECH, spoken
from tests.factories import DialogueFactory, ModelOutputFactory, RecordingFactory, SystemFactory, stored_wav
from tests.support.listening import listen
from webapp.models import User
from webapp.roles import Role


@dataclass
class DialogueWorld:
    dialogues: list[Dialogue]
    systems: list[System]
    outputs: list[ModelOutput]


def build_dialogue_world(
    make_user: Callable[..., User],
    n_systems: int = 2,
    n_dialogues: int = 3,
    turns: int = 3,
    topics: tuple[str, ...] = ("losing a job",),
    reply_audio: Callable[[System, Item], bytes] | None = None,
    prefix: str = "DLG",
    system_prefix: str = "SecretSystem",
) -> DialogueWorld:
    """Create dialogues whose user turns are all recorded (one actor), and systems whose replies to
    every turn are short real speech. Topics go round `topics`; dialogues are <prefix>-000, ..., systems <system_prefix>A, B, ..."""
    actor = make_user(Role.VOICE_ACTOR)
    query = spoken(QUERY_SPEECH)
    dialogues = []
    for n in range(n_dialogues):
        dialogue = DialogueFactory.create(
            external_id=f"{prefix}-{n:03d}", topic=topics[n % len(topics)], turns=turns, turns__actor=actor
        )
        for item in dialogue.turns.all():
            RecordingFactory.create(item=item, actor=actor, wav=query)
        dialogues.append(dialogue)
    systems = [SystemFactory.create(name=f"{system_prefix}{chr(65 + n)}") for n in range(n_systems)]
    outputs = [
        ModelOutputFactory.create(
            system=system,
            item=item,
            response_text=f"Reply to {item.external_id}: that sounds hard.",
            response_audio_key=stored_wav(
                reply_audio(system, item) if reply_audio else spoken(REPLY_SPEECH), "output"
            ),
        )
        for system in systems
        for dialogue in dialogues
        for item in dialogue.turns.order_by("turn")
    ]
    return DialogueWorld(dialogues=dialogues, systems=systems, outputs=outputs)


def make_dialogue_study(
    world: DialogueWorld, evaluators: list[User], admin: User, **overrides: object
) -> Study:
    """Create a dialogue study over the world with small defaults (overridable field by field)."""
    spec: dict[str, object] = {
        "name": "Dialogue pilot",
        "instructions": "Listen to each conversation, then rate every reply.",
        "systems": world.systems,
        "evaluators": evaluators,
        "unit": Study.Unit.DIALOGUE,
        "items_per_system": 2,
        "ratings_per_output": len(evaluators),
        "training_count": 0,
        "trap_count": 0,
        "seed": 11,
    }
    spec.update(overrides)
    return create_study(StudySpec(**spec), created_by=admin)  # type: ignore[arg-type]


def show_long_ago(assignment: StudyAssignment, seconds: float = 600.0) -> datetime:
    """Mark the assignment as shown, and every reply fetched whole through its audio link (a browser
    preloads them), `seconds` ago, so playback reports are plausible at once; return when."""
    replies = StudyTurn.objects.filter(stimulus_id=assignment.stimulus_id)
    listen(assignment.evaluator, *replies.values_list("audio_key", flat=True), ago=timedelta(seconds=seconds))
    shown = timezone.now() - timedelta(seconds=seconds)
    assignment.presented_at = shown
    StudyAssignment.objects.filter(pk=assignment.pk).update(presented_at=shown)
    return shown


def play_and_rate_dialogue(assignment: StudyAssignment, score_for: Callable[[int, str], int]) -> None:
    """Play every turn's reply (plausibly late) and rate it, scores from score_for(turn, dimension)."""
    played = show_long_ago(assignment)
    replies = StudyTurn.objects.filter(stimulus=assignment.stimulus).order_by("turn")
    for reply in replies:
        # Each reply ends a second after it could have: the replies play one after another.
        played += timedelta(seconds=reply.audio_seconds + 1)
        record_turn_playback(assignment, reply.turn, now=played)
    for reply in replies:
        scores = {key: score_for(reply.turn, key) for key in assignment.study.dimensions}
        submit_turn_rating(assignment.pk, reply.turn, scores)
