"""Who may see which item, take and review: one helper per object kind, used by pages and API alike.

Role checks happen first (in `role_required` or DRF's `HasRole`); these helpers then narrow to the
objects a person may touch. Someone else's object answers 404, not 403, so its existence is not
revealed either.
"""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from django.http import Http404

from annotation.recording.models import Item, Review, Take
from webapp.models import User
from webapp.roles import Role, has_role


def item_for_actor(user: User, external_id: str) -> Item:
    """Return the item when it is assigned to the user, else raise Http404."""
    item = Item.objects.filter(external_id=external_id, actor=user).first()
    if item is None:
        raise Http404("No script with this id is assigned to you.")
    return item


def own_takes(user: User, item: Item) -> QuerySet[Take]:
    """Return the takes the user recorded of the item (an actor sees only their own takes)."""
    return Take.objects.filter(item=item, actor=user)


def take_for_viewer(user: User, public_id: uuid.UUID) -> Take:
    """Return the take for an admin, or for the actor who recorded it; else raise Http404."""
    takes = Take.objects.select_related("item", "actor", "analysis_job")
    if not has_role(user, Role.ADMIN):
        takes = takes.filter(actor=user)
    take = takes.filter(public_id=public_id).first()
    if take is None:
        raise Http404("No such take.")
    return take


def review_for_reviewer(user: User, review_id: int) -> Review:
    """Return the user's own review with its take and item, else raise Http404."""
    review = Review.objects.filter(pk=review_id, reviewer=user).select_related("take__item").first()
    if review is None:
        raise Http404("No such review.")
    return review


def users_with_role(role: Role) -> QuerySet[User]:
    """Return the active users holding the role, by user name."""
    return User.objects.filter(is_active=True, groups__name=role.label).distinct().order_by("username")
