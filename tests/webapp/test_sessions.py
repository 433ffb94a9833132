"""Sessions that bring their user (webapp.sessions): one read for session, user and roles, and
every change to who may do what seen on the very next request."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from webapp.models import User, UserSession
from webapp.roles import Role, grant_role

pytestmark = pytest.mark.django_db

QUEUE = reverse("annotation:annotator_queue")


def _logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _session_reads(captured: CaptureQueriesContext) -> list[str]:
    """Return the captured queries that read a session, a user or group memberships."""
    tables = ("webapp_usersession", "webapp_user", "auth_group")
    return [
        query["sql"]
        for query in captured.captured_queries
        if query["sql"].startswith("SELECT") and any(f'FROM "{table}"' in query["sql"] for table in tables)
    ]


def test_one_query_reads_the_session_the_user_and_their_roles(make_user: Callable[..., User]) -> None:
    client = _logged_in(make_user(Role.ANNOTATOR))

    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("keyboard_settings"))

    assert response.status_code == 200
    assert len(_session_reads(captured)) == 1


def test_the_session_row_names_its_user_and_forgets_them_at_logout(make_user: Callable[..., User]) -> None:
    user = make_user(Role.ANNOTATOR)
    client = _logged_in(user)
    key = client.cookies["sessionid"].value

    assert UserSession.objects.get(session_key=key).user == user
    client.post(reverse("logout"))
    assert not UserSession.objects.filter(session_key=key, user=user).exists()


def test_a_revoked_role_is_refused_on_the_next_request(make_user: Callable[..., User]) -> None:
    user = make_user(Role.ANNOTATOR)
    client = _logged_in(user)
    assert client.get(QUEUE).status_code == 200

    user.groups.remove(Group.objects.get(name=Role.ANNOTATOR.label))

    assert client.get(QUEUE).status_code == 403


def test_a_granted_role_is_honoured_on_the_next_request(make_user: Callable[..., User]) -> None:
    user = make_user(Role.REVIEWER)
    client = _logged_in(user)
    assert client.get(QUEUE).status_code == 403

    grant_role(user, Role.ANNOTATOR)

    assert client.get(QUEUE).status_code == 200


def test_a_deactivated_user_is_logged_out(make_user: Callable[..., User]) -> None:
    user = make_user(Role.ANNOTATOR)
    client = _logged_in(user)
    User.objects.filter(pk=user.pk).update(is_active=False)

    response = client.get(QUEUE)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_a_password_changed_elsewhere_ends_this_session(make_user: Callable[..., User]) -> None:
    user = make_user(Role.ANNOTATOR)
    client = _logged_in(user)
    user.set_password("a new and long passphrase")
    user.save()

    response = client.get(QUEUE)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_an_old_cookie_after_logout_is_anonymous(make_user: Callable[..., User]) -> None:
    client = _logged_in(make_user(Role.ANNOTATOR))
    stolen = Client()
    stolen.cookies["sessionid"] = client.cookies["sessionid"].value
    client.post(reverse("logout"))

    assert stolen.get(QUEUE).status_code == 302


def test_a_deleted_user_takes_their_sessions_along(make_user: Callable[..., User]) -> None:
    user = make_user(Role.ANNOTATOR)
    client = _logged_in(user)
    user.delete()

    assert not UserSession.objects.filter(user_id=user.pk).exists()
    assert client.get(QUEUE).status_code == 302


def test_a_superuser_is_an_admin_through_the_session_read(make_user: Callable[..., User]) -> None:
    client = _logged_in(make_user(None, is_superuser=True, is_staff=True))

    assert client.get(reverse("annotation:admin_dashboard")).status_code == 200
