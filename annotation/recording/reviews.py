"""Blind review of takes: who reviews, how a verdict is recorded, and what three verdicts decide.

A take is kept only when all three of its reviewers accept it (EchoChat paper, appendix C.1).
When the last verdict is in, three accepts make the take the item's recording and retire the
item's other takes still waiting; any reject sends the item back to its actor with the reasons.

Lock order, everywhere a take's fate can change (upload, analysis, verdict, reviewer change): the
one order of `ItemQuerySet` (annotation/recording/models.py): item, then take, then review.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.db import transaction
from django.db.models import Count
from django.dispatch import Signal
from django.utils import timezone

from annotation.recording.access import may_review, playback_refusal, verdict_refusal
from annotation.recording.assignment import Workload, pick_least_loaded
from annotation.recording.models import Item, RejectReason, Review, Take
from webapp import audit
from webapp.db import compare_and_set
from webapp.models import User
from webapp.roles import Role, has_role, users_with_role

REVIEWS_PER_TAKE = 3
MAX_COMMENT_CHARS = 2000
# What a verdict writes, and the audit log records before and after.
VERDICT_FIELDS = ("verdict", "reasons", "comment", "submitted_at")

Outcome = Literal["waiting", "accepted", "rejected"]

# Sent inside the verdict's transaction, with the item row locked, when an item's take has been
# accepted and became its recording (keyword `item_id`). Labelling listens
# (`labelling.assignment.start_annotation_when_recorded`, connected in AnnotationConfig.ready), so
# recording never imports the workflows after it.
recording_accepted = Signal()


class ReviewProblem(Exception):
    """A review action that cannot happen; the message is written for the person who tried."""


class ReviewClosed(ReviewProblem):
    """The review or its take was decided meanwhile; nothing is left to do."""


class PlaybackRequired(ReviewProblem):
    """The take has not been played to the end yet (the playback gate, `access.verdict_refusal`)."""


class ReviewNotFound(Exception):
    """No such review for this reviewer (never theirs, or given to someone else meanwhile)."""


@dataclass(frozen=True)
class VerdictResult:
    review: Review
    outcome: Outcome


@dataclass(frozen=True)
class ReviewFeedback:
    """What the actor learns from the reviews of a take: reasons and comments, never who gave them."""

    reasons: list[tuple[str, int]]  # (reason label, how many reviewers gave it), most frequent first
    comments: list[str]


def reviewer_loads() -> list[Workload]:
    """Return each reviewer's open and total reviews."""
    rows = users_with_role(Role.REVIEWER).annotate(
        pending=Count("reviews", filter=Review.open_q("reviews__")),
        total=Count("reviews"),
    )
    return [Workload(user.pk, user.pending, user.total) for user in rows]


def assign_reviewers(take: Take) -> list[Review]:
    """Give the take reviewers up to REVIEWS_PER_TAKE: the least loaded, never its actor.

    Call inside a transaction holding the take's item lock. Two takes analysed at the same
    moment may pick the same least-loaded reviewer; the next take evens that out.
    """
    already = set(take.reviews.values_list("reviewer_id", flat=True))
    wanted = REVIEWS_PER_TAKE - len(already)
    if wanted <= 0:
        return []
    chosen = pick_least_loaded(reviewer_loads(), exclude={take.actor_id, *already}, count=wanted)
    return [Review.objects.create(take=take, reviewer_id=user_id) for user_id in chosen]


def clean_reasons(verdict: str, reasons: Iterable[str]) -> list[str]:
    """Return the reasons to store with a verdict, or raise ReviewProblem when they do not fit it."""
    if verdict not in (Review.Verdict.ACCEPT, Review.Verdict.REJECT):
        raise ReviewProblem("Choose accept or reject.")
    if verdict == Review.Verdict.ACCEPT:
        return []
    given = list(dict.fromkeys(reasons))
    unknown = [reason for reason in given if reason not in RejectReason.values]
    if unknown:
        raise ReviewProblem(f"Unknown reason: {', '.join(unknown)}.")
    if not given:
        raise ReviewProblem("A reject needs at least one reason.")
    return [reason for reason in RejectReason.values if reason in given]


def submit_verdict(
    review_id: int, reviewer: User, verdict: str, reasons: Sequence[str] = (), comment: str = ""
) -> VerdictResult:
    """Record the reviewer's verdict (or their changed mind, until the take is decided) and, when
    it is the take's last, decide the take. Refused before the take has played to the end."""
    stored_reasons = clean_reasons(verdict, reasons)
    comment = comment.strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise ReviewProblem(f"Keep the comment under {MAX_COMMENT_CHARS} characters.")
    found = Review.objects.filter(pk=review_id, reviewer=reviewer).values("take_id", "take__item_id").first()
    if found is None:
        raise ReviewNotFound()
    with transaction.atomic():
        # The race: the last two reviewers submit at the same moment. Unlocked, each transaction
        # would see the other's review still pending and nobody would decide the take (or both
        # would, twice). With the item locked first the second waits for the first to commit,
        # then sees all three verdicts and decides exactly once. The same lock keeps two takes of
        # one item from both becoming its recording.
        item = Item.objects.lock(found["take__item_id"])
        take = Take.objects.select_for_update().get(pk=found["take_id"])
        review = Review.objects.select_for_update().get(pk=review_id)
        if review.reviewer_id != reviewer.pk:
            raise ReviewNotFound()
        if not verdict_changeable(take):
            raise ReviewClosed("This take is decided; its verdicts are final.")
        refusal = verdict_refusal(review)
        if refusal is not None:
            raise PlaybackRequired(refusal)
        before = audit.fields_of(review, *VERDICT_FIELDS)
        review.verdict = verdict
        review.reasons = stored_reasons
        review.comment = comment
        review.submitted_at = timezone.now()
        review.save(update_fields=list(VERDICT_FIELDS))
        audit.record(
            actor=reviewer,
            action=audit.REVIEW_VERDICT,
            obj=review,
            before=before,
            after=audit.fields_of(review, *VERDICT_FIELDS),
        )
        outcome = _decide(item, take, reviewer)
    return VerdictResult(review, outcome)


def take_outcome(verdicts: Sequence[str]) -> Outcome:
    """Return what a take's verdicts decide: "waiting", "accepted" or "rejected".

    The rule (EchoChat paper, appendix C.1), decided here only: a take counts as accepted when
    all REVIEWS_PER_TAKE of its reviewers accept it; any reject rejects it; until every one of
    them has given a verdict it waits.
    """
    if len(verdicts) < REVIEWS_PER_TAKE or Review.Verdict.PENDING in verdicts:
        return "waiting"
    if all(verdict == Review.Verdict.ACCEPT for verdict in verdicts):
        return "accepted"
    return "rejected"


def verdict_changeable(take: Take) -> bool:
    """Return True while the take's reviewers may give or change verdicts: until `take_outcome`
    decides it (the last verdict decides at once, so a verdict stays open only while others wait)."""
    if take.status != Take.Status.IN_REVIEW:
        return False
    return take_outcome(list(take.reviews.values_list("verdict", flat=True))) == "waiting"


def present_reviews(reviews: Sequence[Review], now: datetime | None = None) -> None:
    """Remember when each review's take was first handed to its reviewer (page or API): its
    playback cannot have ended sooner."""
    now = now or timezone.now()
    fresh = [review.pk for review in reviews if review.presented_at is None]
    # One conditional UPDATE: a second tab or a later listing never moves the first time.
    compare_and_set(Review.objects.filter(pk__in=fresh, presented_at__isnull=True), presented_at=now)
    for review in reviews:
        if review.presented_at is None:
            review.presented_at = now


def record_playback(review: Review, now: datetime | None = None) -> Review:
    """Record that the take played to the end, which opens the gate (`access.verdict_unlocked`);
    refuse a report that comes too soon to be true."""
    now = now or timezone.now()
    if review.played_at is not None:
        return review
    refusal = playback_refusal(review, now)
    if refusal is not None:
        raise PlaybackRequired(refusal)
    review.played_at = now
    compare_and_set(Review.objects.filter(pk=review.pk, played_at__isnull=True), played_at=now)
    return review


def _decide(item: Item, take: Take, reviewer: User) -> Outcome:
    outcome = take_outcome(list(take.reviews.values_list("verdict", flat=True)))
    if outcome == "waiting":
        return outcome
    now = timezone.now()
    others = Take.objects.open().filter(item=item).exclude(pk=take.pk)
    if outcome == "accepted":
        _set_status(take, Take.Status.ACCEPTED, now, reviewer)
        for other in others.select_for_update():
            _set_status(other, Take.Status.SUPERSEDED, now, reviewer)
        item.recording, item.state = take, Item.State.RECORDED
        item.save(update_fields=["recording", "state", "updated_at"])
        # Annotation starts as soon as the recording is in: labelling listens for this signal.
        recording_accepted.send(sender=Item, item_id=item.pk)
        return outcome
    _set_status(take, Take.Status.REJECTED, now, reviewer)
    if item.state == Item.State.IN_REVIEW and not others.exists():
        item.state = Item.State.RECORDING
        item.save(update_fields=["state", "updated_at"])
    return outcome


def _set_status(take: Take, status: str, now: datetime, reviewer: User) -> None:
    """Decide a take, logged with the reviewer whose verdict decided it."""
    before = audit.fields_of(take, "status")
    take.status, take.decided_at = status, now
    take.save(update_fields=["status", "decided_at"])
    audit.record(
        actor=reviewer,
        action=audit.TAKE_STATUS,
        obj=take,
        before=before,
        after=audit.fields_of(take, "status"),
    )


def _check_new_reviewer(take: Take, reviewer: User) -> None:
    # `access.may_review` decides; the branches below only explain a refusal to the admin.
    if may_review(take, reviewer):
        return
    if not reviewer.is_active or not has_role(reviewer, Role.REVIEWER):
        raise ReviewProblem(f"{reviewer} is not an active reviewer.")
    if reviewer.pk == take.actor_id:
        raise ReviewProblem("Nobody reviews their own take.")
    if take.reviews.filter(reviewer=reviewer).exists():
        raise ReviewProblem(f"{reviewer} already reviews this take.")
    raise ReviewProblem(f"{reviewer} may not review this take.")


def replace_reviewer(review: Review, new_reviewer: User) -> Review:
    """Give a review that is still pending to another reviewer (an admin override)."""
    with transaction.atomic():
        # Locked in the usual order, so a verdict arriving now is either in before us or refused after.
        Item.objects.lock(review.take.item_id)
        take = Take.objects.select_for_update().get(pk=review.take_id)
        locked = Review.objects.select_for_update().get(pk=review.pk)
        if locked.verdict != Review.Verdict.PENDING:
            raise ReviewProblem("This review already has a verdict; it stays with its reviewer.")
        if take.status != Take.Status.IN_REVIEW:
            raise ReviewProblem("This take is no longer in review.")
        _check_new_reviewer(take, new_reviewer)
        locked.reviewer = new_reviewer
        locked.assigned_at = timezone.now()
        locked.save(update_fields=["reviewer", "assigned_at"])
    return locked


def add_reviewer(take: Take, reviewer: User) -> Review:
    """Give a take short of reviewers one more (an admin override)."""
    with transaction.atomic():
        Item.objects.lock(take.item_id)
        locked = Take.objects.select_for_update().get(pk=take.pk)
        if locked.status != Take.Status.IN_REVIEW:
            raise ReviewProblem("This take is not in review.")
        if locked.reviews.count() >= REVIEWS_PER_TAKE:
            raise ReviewProblem(f"This take already has {REVIEWS_PER_TAKE} reviewers; replace one instead.")
        _check_new_reviewer(locked, reviewer)
        return Review.objects.create(take=locked, reviewer=reviewer)


def feedback_from(reviews: Iterable[Review]) -> ReviewFeedback:
    """Return the reasons and comments of submitted reviews, without who wrote them."""
    labels = dict(RejectReason.choices)
    submitted = [review for review in reviews if review.verdict != Review.Verdict.PENDING]
    counts = Counter(reason for review in submitted for reason in review.reasons)
    rank = {reason: index for index, reason in enumerate(RejectReason.values)}
    ordered = sorted(counts.items(), key=lambda pair: (-pair[1], rank.get(pair[0], len(rank))))
    # Sorted, not in submission order, so the order does not hint at which reviewer wrote what.
    comments = sorted(review.comment for review in submitted if review.comment)
    return ReviewFeedback(
        reasons=[(labels.get(reason, reason), n) for reason, n in ordered], comments=comments
    )
