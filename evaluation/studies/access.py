"""Who may see or rate what in listening studies, and the MOS playback gate.

Admins design studies and read every figure (`role_required(Role.ADMIN)` on their views). An
evaluator sees only the studies they were invited to and only their own assignments, reached by
random public ids; anything else does not exist for them (404, so not even its existence leaks).
What their pages show of a stimulus is blind: see `evaluation.outputs.access`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from uuid import UUID

from django.http import Http404
from django.shortcuts import get_object_or_404

from evaluation.studies.models import Study, StudyAssignment, StudySlot, StudyTurn
from evaluation.studies.trials import slot_label
from webapp.lib.listening import could_have_played_to_the_end
from webapp.listening import listening_refusal
from webapp.models import User


def study_for_admin(study_id: int) -> Study:
    """Return the study an admin asked for; 404 when there is none."""
    return get_object_or_404(Study, pk=study_id)


def study_for_rater(evaluator: User, public_id: UUID) -> Study:
    """Return a study the evaluator was invited to; 404 for any other (its existence stays hidden)."""
    study = Study.objects.filter(public_id=public_id, raters__evaluator=evaluator).first()
    if study is None:
        raise Http404("No such study.")
    return study


def assignment_for_rater(evaluator: User, public_id: UUID) -> StudyAssignment:
    """Return one of the evaluator's own assignments; 404 for anyone else's."""
    assignment = (
        StudyAssignment.objects.filter(public_id=public_id, evaluator=evaluator)
        .select_related("study", "stimulus")
        .first()
    )
    if assignment is None:
        raise Http404("No such sample.")
    return assignment


def slot_for_rater(evaluator: User, public_id: UUID) -> StudySlot:
    """Return a slot of one of the evaluator's own comparison trials; 404 for anyone else's."""
    slot = (
        StudySlot.objects.filter(public_id=public_id, assignment__evaluator=evaluator)
        .select_related("assignment__study", "assignment__stimulus", "part__sample")
        .first()
    )
    if slot is None:
        raise Http404("No such sample.")
    return slot


# --- The MOS playback gate ------------------------------------------------------------------------


def rating_unlocked(
    assignment: StudyAssignment, turn: StudyTurn | None = None, played: Mapping[int, datetime] | None = None
) -> bool:
    """Return True when the rater may score this sample (or this turn of a dialogue): the MOS playback gate.

    The rule: a rater scores a reply only after hearing all of it. A sample with response audio
    opens once the server has recorded that the audio played to the end (`played_at`, set by
    `workflows.record_playback` only when `playback_refusal` allows it) and, asked again here,
    the server sent the rater the whole audio long enough ago (`webapp.listening`); a sample
    without audio (a text-only study) is open at once. In a dialogue study the same rule holds per
    assistant turn: `turn`'s questions open once its reply's playback is recorded (its number in
    `played`, the assignment's `StudyTurnPlayback`s, written by `workflows.record_turn_playback`)
    and its audio was sent whole, or at once when the reply has no audio. The user's turns are
    context and are not gated.

    This function is the only place that decides it (through `rating_refusal`): the rating pages'
    `data-unlocked` (which static/js/rating.js and dialogue_rating.js follow, so the browser merely
    mirrors it) and `workflows.submit_rating` / `submit_turn_rating` (which refuse a locked sample
    or turn) ask it.
    """
    return rating_refusal(assignment, turn, played) is None


def rating_refusal(
    assignment: StudyAssignment,
    turn: StudyTurn | None = None,
    played: Mapping[int, datetime] | None = None,
    now: datetime | None = None,
) -> str | None:
    """Return why the rater may not score this sample (or turn) yet, None when they may (`rating_unlocked`)."""
    if turn is None:
        key, seconds = assignment.stimulus.audio_key, assignment.stimulus.audio_seconds
        if key and assignment.played_at is None:
            return "Play the whole response before rating it."
    else:
        key, seconds = turn.audio_key, turn.audio_seconds
        if key and turn.turn not in (played or {}):
            return f"Play the whole reply of turn {turn.turn} before rating it."
    return _not_heard(assignment, key, seconds, now)


def _not_heard(assignment: StudyAssignment, key: str, seconds: float, now: datetime | None) -> str | None:
    # A length of 0 (not readable) leaves only the rule that the whole audio was sent.
    return listening_refusal(assignment.evaluator_id, key, "the whole response", seconds=seconds, now=now)


def playback_refusal(
    assignment: StudyAssignment,
    now: datetime,
    turn: StudyTurn | None = None,
    played: Mapping[int, datetime] | None = None,
) -> str | None:
    """Return why a "played to the end" report cannot be true yet, or None when it is plausible.

    The server must have sent the rater the whole reply, and it cannot have ended before its first
    byte went out plus the audio's length (less a small slack for clocks and decoders), so an
    earlier report, or one with no audio fetched, is a skipped or scripted playback
    (`webapp.listening`). A dialogue is heard in order: a turn's reply counts only after the
    earlier turns' replies, and cannot have ended before the previous reply ended plus its own length.
    """
    if assignment.presented_at is None:
        return "Open the sample before playing it."
    started, key, seconds = (
        assignment.presented_at,
        assignment.stimulus.audio_key,
        assignment.stimulus.audio_seconds,
    )
    if turn is not None:
        heard = played or {}
        unheard = [str(earlier) for earlier in range(1, turn.turn) if earlier not in heard]
        if unheard:
            # Named, so the rater knows which player to start, not only that some other one comes first.
            replies = (
                f"reply of turn {unheard[0]}"
                if len(unheard) == 1
                else f"replies of turns {', '.join(unheard)}"
            )
            return f"Play the {replies} first: replies are heard in order."
        started = max([started, *(heard[earlier] for earlier in range(1, turn.turn))])
        key, seconds = turn.audio_key, turn.audio_seconds
    if not could_have_played_to_the_end(started, seconds, now):
        return "Play the whole response, from start to end, before rating."
    return _not_heard(assignment, key, seconds, now)


# --- The comparison playback gate -------------------------------------------------------------------


def trial_refusal(
    assignment: StudyAssignment, slots: Sequence[StudySlot], now: datetime | None = None
) -> str | None:
    """Return why the rater may not answer this comparison trial yet, None when they may.

    The rule of `rating_unlocked`, for every sample of the trial: each slot's playback was recorded
    (`workflows.record_slot_playback`, which `slot_playback_refusal` guards) and, asked again
    here, the server sent the rater its whole audio long enough ago (`webapp.listening`). The
    trial page's `data-unlocked` and `workflows.submit_trial` ask it; nothing else decides it.
    """
    pairs = assignment.study.is_pairs
    for slot in slots:
        if slot.played_at is None:
            return f"Play {slot_label(pairs, slot.position)} to the end before answering."
    for slot in slots:
        sample = slot.part.sample
        refusal = _not_heard(assignment, sample.audio_key, sample.audio_seconds, now)
        if refusal is not None:
            return f"{slot_label(pairs, slot.position)}: {refusal}"
    return None


def slot_playback_refusal(slot: StudySlot, slots: Sequence[StudySlot], now: datetime) -> str | None:
    """Return why "this sample played to the end" cannot be true yet, None when it is plausible.

    Samples are heard one after another: since the trial was first shown, at least the length of
    every sample recorded as played, this one included, must have passed (less the slack), and the
    server must have sent the rater this sample's whole audio long enough ago.
    """
    assignment = slot.assignment
    if assignment.presented_at is None:
        return "Open the trial before playing it."
    heard = sum(
        other.part.sample.audio_seconds
        for other in slots
        if other.played_at is not None and other.pk != slot.pk
    )
    sample = slot.part.sample
    if not could_have_played_to_the_end(assignment.presented_at, heard + sample.audio_seconds, now):
        return "Play each sample from start to end, one after another, before answering."
    return _not_heard(assignment, sample.audio_key, sample.audio_seconds, now)
