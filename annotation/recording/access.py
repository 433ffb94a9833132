"""Who may see which item, take and review: one helper per object kind, used by pages and API alike.

Role checks happen first (in `role_required` or DRF's `HasRole`); these helpers then narrow to the
objects a person may touch. Someone else's object answers 404, not 403, so its existence is not
revealed either.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from annotation.recording.models import Item, Review, Take
from webapp.listening import listening_refusal
from webapp.models import User
from webapp.roles import Role, has_role, users_with_role

# Who manages items, takes and reviews: sees every take with its actor and reviewers, overrides
# reviewers, restarts analyses, and uses the Django admin of these models.
RECORDING_ADMINS: tuple[Role, ...] = (Role.ADMIN,)

# The review playback gate (the rule of every listening gate, `webapp.listening`): a reviewer may
# play at up to MAX_REVIEW_SPEED, so a take of d seconds can have ended d / MAX_REVIEW_SPEED after
# its first byte was sent to them.
MAX_REVIEW_SPEED = 2.0


def may_manage_recording(user: User | AnonymousUser) -> bool:
    """Return True when the user may see every take (and who made it) and override its reviews."""
    return has_role(user, *RECORDING_ADMINS)


def items_of_actor(user: User) -> QuerySet[Item]:
    """Return the items in use assigned to the user: the only scripts an actor sees or records."""
    return Item.objects.in_use().filter(actor=user)


def may_record(item: Item, user: User) -> bool:
    """Return True when the item is assigned to the user (whether it is open for recording now is
    `takes.check_recordable`'s business)."""
    return item.actor_id == user.pk


def item_for_actor(user: User, external_id: str) -> Item:
    """Return the item when it is assigned to the user, else raise Http404."""
    item = items_of_actor(user).filter(external_id=external_id).first()
    if item is None:
        raise Http404("No script with this id is assigned to you.")
    return item


def own_takes(user: User, item: Item) -> QuerySet[Take]:
    """Return the takes the user recorded of the item (an actor sees only their own takes)."""
    return Take.objects.filter(item=item, actor=user)


def take_for_viewer(user: User, public_id: uuid.UUID) -> Take:
    """Return the take for an admin, or for the actor who recorded it; else raise Http404."""
    takes = Take.objects.select_related("item", "actor", "analysis_job")
    if not may_manage_recording(user):
        takes = takes.filter(actor=user)
    take = takes.filter(public_id=public_id).first()
    if take is None:
        raise Http404("No such take.")
    return take


def review_for_reviewer(user: User, public_id: uuid.UUID) -> Review:
    """Return the user's own review (by its public id) with its take and item, else raise Http404."""
    review = Review.objects.filter(public_id=public_id, reviewer=user).select_related("take__item").first()
    if review is None:
        raise Http404("No such review.")
    return review


def eligible_reviewers(take: Take) -> QuerySet[User]:
    """Return the users who may review the take: active reviewers, never its actor, not already on it.

    The rule, decided here only: the automatic assignment draws from the same reviewers
    (`reviews.reviewer_loads`, excluding the actor and those already on the take), an admin's
    override offers this list, and `may_review` asks it about one person.
    """
    return (
        users_with_role(Role.REVIEWER)
        .exclude(pk=take.actor_id)
        .exclude(pk__in=take.reviews.values("reviewer_id"))
    )


def may_review(take: Take, user: User) -> bool:
    """Return True when the user may be given a review of the take (see `eligible_reviewers`)."""
    return eligible_reviewers(take).filter(pk=user.pk).exists()


def may_see_flags_of(review: Review) -> bool:
    """Return True once the reviewer's verdict on the take is recorded.

    The speech check's flags ("the take may not say 'bank'") would sway a verdict still to come,
    so a reviewer judges blind and reads them afterwards. The take's actor sees them on the take
    page, admins there and on the dashboard (`take_for_viewer`); nobody else sees takes at all.
    """
    return review.verdict != Review.Verdict.PENDING


# --- The review playback gate ------------------------------------------------------------------


def verdict_unlocked(review: Review) -> bool:
    """Return True when the reviewer may give (or change) a verdict: the take played to the end.

    The rule, decided here only (`verdict_refusal`): a reviewer judges a take only after hearing
    all of it once. The server records the playback (`reviews.record_playback`, only when
    `playback_refusal` allows it); the review page's buttons (`data-unlocked`, followed by
    static/js/review_keys.js), the page's POST and the verdict API all go through
    `reviews.submit_verdict`, which asks `verdict_refusal`.
    """
    return verdict_refusal(review) is None


def verdict_refusal(review: Review, now: datetime | None = None) -> str | None:
    """Return why the reviewer may not give a verdict yet, None when they may: the playback is
    recorded, and the reviewer who holds the review now was sent the whole take long enough ago
    (asked again, so a review handed to another reviewer after a playback waits for theirs)."""
    if review.played_at is None:
        return "Play the whole take before giving a verdict."
    return playback_refusal(review, now or timezone.now())


def playback_refusal(review: Review, now: datetime) -> str | None:
    """Return why a "played to the end" report cannot be true yet, or None when it is plausible:
    the take was shown, the server sent the reviewer all of its audio, and its length (at up to
    MAX_REVIEW_SPEED) has passed since the first byte went out (`webapp.listening`)."""
    if review.presented_at is None:
        return "Open the take before playing it."
    take = review.take
    return listening_refusal(
        review.reviewer_id,
        take.audio_key,
        "the whole take",
        seconds=take.duration_seconds,
        now=now,
        max_speed=MAX_REVIEW_SPEED,
    )
