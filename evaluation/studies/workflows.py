"""Workflows of rating in listening studies: present, play and rate a stimulus; decide on a rater.

Each function with side effects is one workflow, run in a transaction where rows are read before
they are written. Creating a study is in `evaluation.studies.creation.items`; who may rate when (the
playback gate) in `evaluation.studies.access`; the figures in `evaluation.studies.reports`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from evaluation.studies.access import playback_refusal, rating_refusal, slot_playback_refusal, trial_refusal
from evaluation.studies.design import SCORES
from evaluation.studies.models import (
    Study,
    StudyAssignment,
    StudyRater,
    StudyRating,
    StudySlot,
    StudyTurn,
    StudyTurnPlayback,
)
from evaluation.studies.trials import answer_refusal
from webapp import audit
from webapp.db import compare_and_set
from webapp.models import User


class RatingRefused(Exception):
    """A rating or playback report that cannot be accepted; the message is for the evaluator."""


def present(assignment: StudyAssignment, now: datetime | None = None) -> None:
    """Remember when the evaluator first saw the assignment (playback cannot end sooner)."""
    if assignment.presented_at is None:
        assignment.presented_at = now or timezone.now()
        # One conditional UPDATE, atomic without a transaction: filter(presented_at=None) keeps a
        # second tab showing the page from moving the first time (and so the playback gate).
        compare_and_set(
            StudyAssignment.objects.filter(pk=assignment.pk, presented_at__isnull=True),
            presented_at=assignment.presented_at,
        )


def record_playback(assignment: StudyAssignment, now: datetime | None = None) -> StudyAssignment:
    """Record that the response was played to the end, which opens the playback gate
    (`access.rating_unlocked`); refuse a report that comes too soon to be true."""
    now = now or timezone.now()
    if assignment.played_at is not None:
        return assignment
    refusal = playback_refusal(assignment, now)
    if refusal is not None:
        raise RatingRefused(refusal)
    assignment.played_at = now
    # One conditional UPDATE, atomic without a transaction: when two tabs report at once, the
    # first time recorded stays.
    compare_and_set(StudyAssignment.objects.filter(pk=assignment.pk, played_at__isnull=True), played_at=now)
    return assignment


def submit_rating(
    assignment_id: int, scores: Mapping[str, int], now: datetime | None = None
) -> StudyAssignment:
    """Store the evaluator's scores for one assignment; refuse anything the study's rules forbid.

    Refused: a second submission (ratings are final, as in a blind listening test), one out of
    presentation order, one before the response was played to the end, or scores that do not
    cover exactly the study's dimensions with 1-5.
    """
    with transaction.atomic():
        # Locked: a double press of Enter or two open tabs must not store two sets of scores.
        assignment = (
            StudyAssignment.objects.select_for_update()
            .select_related("study", "stimulus")
            .get(pk=assignment_id)
        )
        if assignment.submitted_at is not None:
            raise RatingRefused("This sample is already rated.")
        if assignment.study.is_dialogue:
            raise RatingRefused("Rate a conversation turn by turn.")
        if assignment.study.is_comparison:
            raise RatingRefused("Answer a comparison trial on its own page.")
        if StudyAssignment.objects.unrated_before(assignment).exists():
            raise RatingRefused("Rate the samples in the order they are given.")
        refusal = rating_refusal(assignment, now=now)
        if refusal is not None:
            raise RatingRefused(refusal)
        expected = set(assignment.study.dimensions)
        if set(scores) != expected or any(score not in SCORES for score in scores.values()):
            raise RatingRefused("Give every question a score from 1 to 5.")
        StudyRating.objects.bulk_create(
            StudyRating(assignment=assignment, dimension=dimension, score=score)
            for dimension, score in scores.items()
        )
        assignment.submitted_at = now or timezone.now()
        assignment.save(update_fields=["submitted_at"])
        audit.record(
            actor=assignment.evaluator,
            action=audit.RATING,
            obj=assignment,
            after={"turn": 1, "scores": dict(scores), "submitted_at": assignment.submitted_at},
        )
    return assignment


# --- Dialogue studies: the same rules, per assistant turn ------------------------------------------


def turn_playbacks(assignment: StudyAssignment) -> dict[int, datetime]:
    """Return turn -> when its reply was recorded as played to the end, for one assignment."""
    return dict(assignment.turn_playbacks.values_list("turn", "played_at"))


def record_turn_playback(assignment: StudyAssignment, turn: int, now: datetime | None = None) -> None:
    """Record that a dialogue turn's reply played to the end, which opens that turn's questions
    (`access.rating_unlocked`); refuse a report that comes too soon or out of turn."""
    now = now or timezone.now()
    reply = _turn_of(assignment, turn)
    with transaction.atomic():
        # Locked: two tabs reporting at once must agree on which earlier turns were heard when.
        StudyAssignment.objects.select_for_update().filter(pk=assignment.pk).first()
        played = turn_playbacks(assignment)
        if turn in played:
            return
        refusal = playback_refusal(assignment, now, reply, played)
        if refusal is not None:
            raise RatingRefused(refusal)
        StudyTurnPlayback.objects.create(assignment=assignment, turn=turn, played_at=now)


def submit_turn_rating(
    assignment_id: int, turn: int, scores: Mapping[str, int], now: datetime | None = None
) -> StudyAssignment:
    """Store the evaluator's scores for one assistant turn of a dialogue; the assignment counts as
    submitted once every turn is rated. Refused as `submit_rating` refuses, per turn: a turn rated
    twice, a dialogue out of presentation order, a turn whose reply has not played to the end, or
    scores that do not cover exactly the study's dimensions with 1-5."""
    with transaction.atomic():
        assignment = (
            StudyAssignment.objects.select_for_update()
            .select_related("study", "stimulus")
            .get(pk=assignment_id)
        )
        reply = _turn_of(assignment, turn)
        if assignment.submitted_at is not None or assignment.ratings.filter(turn=turn).exists():
            raise RatingRefused("This turn is already rated.")
        if StudyAssignment.objects.unrated_before(assignment).exists():
            raise RatingRefused("Rate the samples in the order they are given.")
        refusal = rating_refusal(assignment, reply, turn_playbacks(assignment), now)
        if refusal is not None:
            raise RatingRefused(refusal)
        expected = set(assignment.study.dimensions)
        if set(scores) != expected or any(score not in SCORES for score in scores.values()):
            raise RatingRefused("Give every question a score from 1 to 5.")
        StudyRating.objects.bulk_create(
            StudyRating(assignment=assignment, turn=turn, dimension=dimension, score=score)
            for dimension, score in scores.items()
        )
        rated_turns = assignment.ratings.values("turn").distinct().count()
        if rated_turns == assignment.stimulus.turns.count():
            assignment.submitted_at = now or timezone.now()
            assignment.save(update_fields=["submitted_at"])
        audit.record(
            actor=assignment.evaluator,
            action=audit.RATING,
            obj=assignment,
            after={"turn": turn, "scores": dict(scores), "submitted_at": assignment.submitted_at},
        )
    return assignment


def _turn_of(assignment: StudyAssignment, turn: int) -> StudyTurn:
    reply = StudyTurn.objects.filter(stimulus_id=assignment.stimulus_id, turn=turn).first()
    if reply is None:
        raise RatingRefused("This conversation has no such turn.")
    return reply


# --- Comparison studies: every sample of a trial heard, then one answer ---------------------------


def record_slot_playback(slot_id: int, now: datetime | None = None) -> StudySlot:
    """Record that one sample of a comparison trial played to the end; refuse a report that comes
    too soon to be true (`access.slot_playback_refusal`)."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment_id = StudySlot.objects.values_list("assignment_id", flat=True).get(pk=slot_id)
        # Locked: two samples reported at once must each count the other's length. Only the
        # assignment's row: locking the joined study would queue every rater of the study.
        assignment = (
            StudyAssignment.objects.select_for_update(of=("self",))
            .select_related("study")
            .get(pk=assignment_id)
        )
        slots = list(assignment.slots.select_related("part__sample"))
        slot = next(other for other in slots if other.pk == slot_id)
        if slot.played_at is not None:
            return slot
        slot.assignment = assignment
        refusal = slot_playback_refusal(slot, slots, now)
        if refusal is not None:
            raise RatingRefused(refusal)
        slot.played_at = now
        slot.save(update_fields=["played_at"])
    return slot


def submit_trial(
    assignment_id: int, answers: Mapping[int, int], now: datetime | None = None
) -> StudyAssignment:
    """Store the rater's answer to one comparison trial (place -> value, `trials.answer_refusal`).

    Refused as `submit_rating` refuses: a second answer, one out of presentation order, one before
    every sample of the trial played to the end (`access.trial_refusal`), or values off the scale.
    """
    with transaction.atomic():
        assignment = (
            StudyAssignment.objects.select_for_update(of=("self",))
            .select_related("study", "stimulus")
            .get(pk=assignment_id)
        )
        if assignment.submitted_at is not None:
            raise RatingRefused("This trial is already answered.")
        if not assignment.study.is_comparison:
            raise RatingRefused("This study asks for ratings, not comparisons.")
        if StudyAssignment.objects.unrated_before(assignment).exists():
            raise RatingRefused("Answer the trials in the order they are given.")
        slots = list(assignment.slots.select_related("part__sample").order_by("position"))
        refusal = trial_refusal(assignment, slots, now) or answer_refusal(
            assignment.study.kind, [slot.position for slot in slots], answers
        )
        if refusal is not None:
            raise RatingRefused(refusal)
        for slot in slots:
            if slot.position in answers:
                slot.score = answers[slot.position]
        StudySlot.objects.bulk_update([slot for slot in slots if slot.position in answers], ["score"])
        assignment.submitted_at = now or timezone.now()
        assignment.save(update_fields=["submitted_at"])
    return assignment


def decide_rater(
    study: Study, evaluator_id: int, decision: str, decided_by: User, note: str = ""
) -> StudyRater:
    """Record an admin's decision to include or exclude a rater from the study's figures."""
    if decision not in StudyRater.Decision.values:
        raise ValueError(f"unknown decision {decision!r}")
    with transaction.atomic():
        # Locked so two admins deciding at once leave one consistent (decision, by, at) triple.
        seat = StudyRater.objects.select_for_update().get(study=study, evaluator_id=evaluator_id)
        seat.decision = decision
        seat.decision_note = note
        seat.decided_by = decided_by
        seat.decided_at = timezone.now()
        seat.save(update_fields=["decision", "decision_note", "decided_by", "decided_at"])
    return seat
