"""Builders for comparison-study tests: a study of each kind over the listening-study world, and a
rater who plays every sample of a trial through the real gate before answering."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from evaluation.studies.models import Study, StudyAssignment, StudySlot
from evaluation.studies.workflows import record_slot_playback, submit_trial
from tests.evaluation.studies.support import StudyWorld, make_study
from tests.support.listening import listen
from webapp.models import User


def make_comparison(
    world: StudyWorld, evaluators: list[User], admin: User, kind: str, **overrides: object
) -> Study:
    """Create a comparison study of `kind` (MUSHRA: the first system is the reference, low and mid anchors)."""
    spec: dict[str, object] = {
        "kind": kind,
        "dimensions": ["naturalness"],
        "trap_count": 0,
        "training_count": 0,
    }
    if kind == "mushra":
        spec.update(reference_system=world.systems[0], anchors=["low", "mid"])
    spec.update(overrides)
    return make_study(world, evaluators, admin, **spec)


def play_trial(assignment: StudyAssignment) -> list[StudySlot]:
    """Fetch every sample of the trial whole, back-date the showing, and record each playback."""
    slots = list(assignment.slots.select_related("part__sample").order_by("position"))
    listen(assignment.evaluator, *(slot.part.sample.audio_key for slot in slots))
    total = sum(slot.part.sample.audio_seconds for slot in slots)
    StudyAssignment.objects.filter(pk=assignment.pk).update(
        presented_at=timezone.now() - timedelta(seconds=total + 5)
    )
    for slot in slots:
        record_slot_playback(slot.pk)
    return slots


def answer_everything(study: Study, evaluator: User, answer_for) -> None:
    """Play and answer every trial of the evaluator in order; answer_for(assignment, slots) -> place -> value."""
    for assignment in study.assignments.filter(evaluator=evaluator).order_by("position"):
        slots = play_trial(assignment)
        submit_trial(assignment.pk, answer_for(assignment, slots))
