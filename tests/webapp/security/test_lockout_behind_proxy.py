"""Behind the trusted nginx proxy, the login lockout and the API's address throttle count each
client's own address (a pentest locked any account for everyone with five bad passwords)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import TEST_PASSWORD
from webapp.api.throttles import AddressThrottle
from webapp.lib.client_address import trusted_networks
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _through_nginx(client_address: str) -> Client:
    return Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=client_address)


def _log_in(client: Client, username: str, password: str) -> int:
    return client.post(reverse("login"), {"username": username, "password": password}).status_code


@pytest.fixture
def behind_nginx(settings: Any) -> None:
    settings.TRUSTED_PROXIES = trusted_networks(["127.0.0.1", "::1"])


def test_a_guesser_behind_the_proxy_locks_only_themself_out(
    behind_nginx: None, make_user: Callable[..., User], settings: Any
) -> None:
    make_user(Role.ANNOTATOR, "target")
    attacker = _through_nginx("203.0.113.9")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _log_in(attacker, "target", "wrong-guess")
    assert _log_in(attacker, "target", TEST_PASSWORD) == 429
    assert _log_in(_through_nginx("198.51.100.4"), "target", TEST_PASSWORD) == 302


def test_a_forged_forwarded_for_does_not_escape_the_lockout(
    behind_nginx: None, make_user: Callable[..., User], settings: Any
) -> None:
    # The client writes its own X-Forwarded-For; nginx appends the real address to it.
    make_user(Role.ANNOTATOR, "target")
    for n in range(settings.AXES_FAILURE_LIMIT):
        _log_in(_through_nginx(f"192.0.2.{n}, 203.0.113.9"), "target", "wrong-guess")
    assert _log_in(_through_nginx("192.0.2.99, 203.0.113.9"), "target", TEST_PASSWORD) == 429


def test_without_a_trusted_proxy_the_header_is_ignored(make_user: Callable[..., User], settings: Any) -> None:
    make_user(Role.ANNOTATOR, "target")
    for n in range(settings.AXES_FAILURE_LIMIT):
        _log_in(Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}"), "target", "nope")
    assert _log_in(Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="192.0.2.99"), "target", "x") == 429


def test_the_anonymous_allowance_fires_per_client_behind_the_proxy(
    behind_nginx: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        AddressThrottle, "THROTTLE_RATES", {**AddressThrottle.THROTTLE_RATES, "anon": "3/hour"}
    )
    statuses = [_through_nginx("203.0.113.9").get("/api/items/").status_code for _ in range(5)]
    assert statuses == [403, 403, 403, 429, 429]  # counted before the permission check refuses
    assert _through_nginx("198.51.100.4").get("/api/items/").status_code == 403  # another client
