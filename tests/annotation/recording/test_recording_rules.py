"""The recording rules written once (annotation.recording.access): who records, who reviews, who manages."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.access import (
    eligible_reviewers,
    items_of_actor,
    may_manage_recording,
    may_record,
    may_review,
)
from annotation.recording.models import Take
from annotation.recording.reviews import ReviewProblem, add_reviewer
from annotation.recording.takes import TakeNotAllowed, check_recordable
from tests.factories import ItemFactory, ReviewFactory, TakeFactory
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def test_an_actor_records_only_the_items_assigned_to_them(users: dict[str, User]) -> None:
    mine = ItemFactory.create(actor=users["actor"], state="recording")
    other = ItemFactory.create(state="recording")

    assert list(items_of_actor(users["actor"])) == [mine]
    assert may_record(mine, users["actor"]) and not may_record(other, users["actor"])
    check_recordable(mine, users["actor"])
    with pytest.raises(TakeNotAllowed, match="not assigned to you"):
        check_recordable(other, users["actor"])


def test_only_admins_manage_recording(users: dict[str, User]) -> None:
    assert may_manage_recording(users["admin"])
    assert not any(may_manage_recording(users[name]) for name in users if name != "admin")


def test_reviewers_are_active_never_the_actor_and_not_already_on_the_take(
    make_user: Callable[..., User],
) -> None:
    actor_reviewer = make_user(Role.REVIEWER)
    on_it, free = make_user(Role.REVIEWER), make_user(Role.REVIEWER)
    inactive = make_user(Role.REVIEWER, is_active=False)
    annotator = make_user(Role.ANNOTATOR)
    take = TakeFactory.create(actor=actor_reviewer, status=Take.Status.IN_REVIEW)
    ReviewFactory.create(take=take, reviewer=on_it)

    assert list(eligible_reviewers(take)) == [free]
    # The one-person question and the list are the same rule.
    for user in (actor_reviewer, on_it, free, inactive, annotator):
        assert may_review(take, user) is (user == free)


@pytest.mark.parametrize(
    ("who", "message"),
    [("actor", "own take"), ("on_it", "already reviews"), ("inactive", "not an active reviewer")],
)
def test_an_admin_override_refuses_whom_the_rule_refuses(
    make_user: Callable[..., User], who: str, message: str
) -> None:
    people = {
        "actor": make_user(Role.REVIEWER),
        "on_it": make_user(Role.REVIEWER),
        "inactive": make_user(Role.REVIEWER, is_active=False),
    }
    take = TakeFactory.create(actor=people["actor"], status=Take.Status.IN_REVIEW)
    ReviewFactory.create(take=take, reviewer=people["on_it"])

    with pytest.raises(ReviewProblem, match=message):
        add_reviewer(take, people[who])


def test_an_override_naming_the_takes_own_actor_without_the_reviewer_role_says_so_first(
    make_user: Callable[..., User],
) -> None:
    # The role is checked before "own take", as it was before access.may_review decided it.
    actor = make_user(Role.VOICE_ACTOR)
    take = TakeFactory.create(actor=actor, status=Take.Status.IN_REVIEW)

    with pytest.raises(ReviewProblem, match="not an active reviewer"):
        add_reviewer(take, actor)


@pytest.mark.parametrize("model", ["item", "take", "review"])
def test_studio_admins_manage_recording_in_the_django_admin(
    client_for: Callable[[str], Client], model: str
) -> None:
    ReviewFactory.create()

    response = client_for("admin").get(reverse(f"admin:annotation_{model}_changelist"))

    assert response.status_code == 200


@pytest.mark.parametrize("model", ["item", "take", "review"])
def test_staff_without_the_admin_role_do_not_manage_recording(
    make_user: Callable[..., User], model: str
) -> None:
    client = Client()
    client.force_login(make_user(Role.ANNOTATOR, is_staff=True))

    assert client.get(reverse(f"admin:annotation_{model}_changelist")).status_code == 403
