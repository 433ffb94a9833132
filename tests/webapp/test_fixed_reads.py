"""Reads compiled once (webapp.fixed_reads) return what the ORM's own queryset returns, on SQLite
and PostgreSQL alike; a read whose values would change its SQL's shape is refused."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db.models import Model
from django.test import Client
from django.utils import timezone

from webapp.fixed_reads import INTEGER, MOMENT, TEXT, FixedRead
from webapp.models import User, UserSession
from webapp.roles import Role, grant_role
from webapp.sessions import SESSION_READ

pytestmark = pytest.mark.django_db


def _state(row: Model) -> dict[str, Any]:
    """A row's fields and annotations, and those of the objects select_related loaded with it."""
    seen = {key: value for key, value in vars(row).items() if not key.startswith("_")}
    cached = row._state.fields_cache
    return {**seen, **{name: _state(other) if other else None for name, other in cached.items()}}


def _same(read: FixedRead[Any], **values: object) -> list[dict[str, Any]]:
    orm = [_state(row) for row in read.queryset(**values)]
    fixed = [_state(row) for row in read.read(**values)]
    assert fixed == orm
    return fixed


def test_the_session_read_equals_the_orm_read_for_every_kind_of_session(
    make_user: Callable[..., User],
) -> None:
    two_roles = make_user(Role.ANNOTATOR)
    grant_role(two_roles, Role.REVIEWER)
    no_role = User.objects.create_user(username="nobody")
    clients = {}
    for user in (two_roles, no_role):
        clients[user.pk] = Client()
        clients[user.pk].force_login(user)
    now = timezone.now()

    for user in (two_roles, no_role):
        key = clients[user.pk].cookies["sessionid"].value
        rows = _same(SESSION_READ, key=key, now=now)
        assert {row["user"]["id"] for row in rows} == {user.pk}
    assert len(_same(SESSION_READ, key=clients[two_roles.pk].cookies["sessionid"].value, now=now)) == 2
    # An expired session, and one that does not exist: no row either way.
    key = clients[no_role.pk].cookies["sessionid"].value
    assert _same(SESSION_READ, key=key, now=now + datetime.timedelta(days=400)) == []
    assert _same(SESSION_READ, key="no-such-session", now=now) == []


def test_a_session_without_a_user_reads_as_the_orm_reads_it() -> None:
    session = UserSession.objects.create(
        session_key="anonymous-session",
        session_data="e30:",
        expire_date=timezone.now() + datetime.timedelta(days=1),
    )

    rows = _same(SESSION_READ, key=session.session_key, now=timezone.now())

    assert len(rows) == 1 and rows[0]["user_id"] is None


def test_a_role_granted_after_the_first_read_is_in_the_next_one(make_user: Callable[..., User]) -> None:
    user = make_user(Role.ANNOTATOR)
    client = Client()
    client.force_login(user)
    key = client.cookies["sessionid"].value
    assert {row.group_name for row in SESSION_READ.read(key=key, now=timezone.now())} == {  # type: ignore[attr-defined]
        Role.ANNOTATOR.label
    }

    grant_role(user, Role.REVIEWER)

    names = {row.group_name for row in SESSION_READ.read(key=key, now=timezone.now())}  # type: ignore[attr-defined]
    assert names == {Role.ANNOTATOR.label, Role.REVIEWER.label}


def test_integer_parameters_and_constants_keep_their_places() -> None:
    Group.objects.bulk_create(Group(name=f"group {n}") for n in range(5))
    first = Group.objects.get(name="group 0")
    read = FixedRead(
        lambda low, name: (
            Group.objects.filter(pk__gte=low, name__startswith="group").exclude(name=name).order_by("pk")
        ),
        low=INTEGER,
        name=TEXT,
    )

    rows = _same(read, low=first.pk + 1, name="group 3")
    assert [row["name"] for row in rows] == ["group 1", "group 2", "group 4"]
    assert _same(read, low=first.pk, name="nothing") and _same(read, low=first.pk + 99, name="x") == []


@pytest.mark.parametrize("value", [None, [1, 2], True, 2**40, -(2**40), "7"])
def test_values_that_would_change_the_sql_are_read_by_the_orm(value: object) -> None:
    Group.objects.bulk_create(Group(name=f"group {n}") for n in range(3))
    read = FixedRead(lambda low: Group.objects.filter(pk__gte=low).order_by("pk"), low=INTEGER)
    read.read(low=1)  # compiled

    if value is None or isinstance(value, list):
        with pytest.raises((TypeError, ValueError)) as by_orm:
            list(read.queryset(low=value))
        with pytest.raises(by_orm.type):  # refused as the ORM refuses it
            read.read(low=value)
    else:
        _same(read, low=value)


def test_a_parameter_the_sql_does_not_carry_is_refused_when_first_compiled() -> None:
    read = FixedRead(lambda when: Group.objects.all(), when=MOMENT)

    with pytest.raises(ValueError, match="when"):
        read.read(when=timezone.now())
