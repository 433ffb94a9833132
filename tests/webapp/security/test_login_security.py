"""Passwords: Django's four validators, and login throttling by django-axes on the real login form."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from tests.factories import TEST_PASSWORD
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("short1", "too short"),
        ("password123", "too common"),
        ("73915028461", "entirely numeric"),
        ("annotator-ann", "too similar"),
    ],
)
def test_weak_passwords_are_refused(make_user: Callable[..., User], password: str, reason: str) -> None:
    user = make_user(Role.ANNOTATOR, "annotator-ann")
    with pytest.raises(ValidationError, match=reason):
        validate_password(password, user)


def test_a_strong_password_passes(make_user: Callable[..., User]) -> None:
    validate_password("violet-harbour-tuesday-42", make_user(Role.ANNOTATOR))


def _log_in(client: Client, username: str, password: str) -> int:
    response = client.post(reverse("login"), {"username": username, "password": password})
    return response.status_code


def test_repeated_failures_lock_the_account_for_that_address(
    make_user: Callable[..., User], settings
) -> None:
    make_user(Role.ANNOTATOR, "target")
    make_user(Role.ANNOTATOR, "bystander")
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _log_in(attacker, "target", "wrong-guess") == 200  # the form again, with its error
    locked = attacker.post(reverse("login"), {"username": "target", "password": "wrong-guess"})
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content

    # Locked: even the right password is refused from there, and no session is made.
    assert _log_in(attacker, "target", TEST_PASSWORD) == 429
    assert "_auth_user_id" not in attacker.session

    # Another person, and the same person from their own machine, are not locked out.
    assert _log_in(Client(REMOTE_ADDR="203.0.113.9"), "bystander", TEST_PASSWORD) == 302
    assert _log_in(Client(REMOTE_ADDR="198.51.100.4"), "target", TEST_PASSWORD) == 302


def test_a_success_resets_the_failure_count(make_user: Callable[..., User], settings) -> None:
    make_user(Role.REVIEWER, "forgetful")
    client = Client(REMOTE_ADDR="192.0.2.7")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _log_in(client, "forgetful", "nope")
    assert _log_in(client, "forgetful", TEST_PASSWORD) == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _log_in(client, "forgetful", "nope") == 200
    assert _log_in(client, "forgetful", TEST_PASSWORD) == 302


def test_a_login_without_a_request_is_not_throttled_but_still_checks_the_password(
    make_user: Callable[..., User],
) -> None:
    # A test client's login() (and a script's authenticate()) has no address: axes cannot count it.
    make_user(Role.EVALUATOR, "scripted")
    assert Client().login(username="scripted", password=TEST_PASSWORD) is True
    assert Client().login(username="scripted", password="wrong") is False
