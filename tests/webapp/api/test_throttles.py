"""The API throttles: a burst of bad tokens gets 429 and is logged; users and addresses have their
own allowances (the pentest sent 60 bad tokens in 0.3 s and got 60 plain 403s)."""

from __future__ import annotations

import logging

import pytest
from django.test import Client
from django.urls import reverse

from webapp.api.throttles import UserThrottle
from webapp.api.tokens import create_token
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _get(token: str, address: str = "203.0.113.7") -> int:
    return (
        Client(HTTP_AUTHORIZATION=f"Token {token}", REMOTE_ADDR=address)
        .get(reverse("annotation:api_items"))
        .status_code
    )


def test_a_burst_of_bad_tokens_gets_429_and_each_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="echostudio.security"):
        statuses = [_get(f"es_guess{n}") for n in range(60)]
    assert statuses[:10] == [403] * 10  # the allowance: ten failed tokens a minute (settings)
    assert set(statuses[10:]) == {429}
    failures = [record for record in caplog.records if "failed API token" in record.getMessage()]
    assert len(failures) == 10 and all("203.0.113.7" in record.getMessage() for record in failures)
    assert not any("es_guess" in record.getMessage() for record in caplog.records)  # never the token


def test_the_lockout_is_per_address_and_holds_against_a_good_token(users) -> None:
    good = create_token(users["admin"], "script").secret
    for n in range(10):
        _get(f"es_guess{n}")
    assert _get(good) == 429  # still guessing from here: no token is tried until the window passes
    assert _get(good, address="198.51.100.9") == 200  # another address is not held


def test_a_signed_in_user_has_an_allowance_of_requests(
    users, make_user, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DRF reads the rates once, at import: set the user's allowance on the throttle itself.
    monkeypatch.setattr(UserThrottle, "THROTTLE_RATES", {**UserThrottle.THROTTLE_RATES, "user": "5/min"})
    token = create_token(users["admin"], "script").secret
    assert [_get(token) for _ in range(7)] == [200] * 5 + [429] * 2
    other = create_token(make_user(Role.ADMIN), "script").secret
    assert _get(other) == 200  # per user, from the same address
