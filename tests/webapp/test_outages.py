"""Outages degrade, they don't break: a database that is down answers 503 with Retry-After (JSON on
the API), never 500; a cache that is down is no cache at all, and the API goes on answering."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client

from webapp.api.tokens import create_token
from webapp.models import User


def _database_down(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
    raise OperationalError("connection to server at 127.0.0.1, port 5432 failed: Connection refused")


@pytest.mark.parametrize("path", ["/", "/api/systems/"])
def test_a_request_while_the_database_is_down_answers_503_with_retry_after(
    db: None, users: dict[str, User], path: str, settings
) -> None:
    settings.OUTAGE_RETRY_AFTER_SECONDS = 7
    client = Client(raise_request_exception=False)
    client.force_login(users["admin"])

    # when every query fails as it does while PostgreSQL restarts (the session's read first)
    with connection.execute_wrapper(_database_down):
        response = client.get(path)

    # then the answer says "try again shortly", in the API's shape on the API
    assert response.status_code == 503
    assert response["Retry-After"] == "7"
    if path.startswith("/api/"):
        assert response.json() == {
            "detail": "The database is unavailable for a moment; nothing was changed. Try again in 7 seconds.",
            "problems": [],
        }
    else:
        assert response["Content-Type"].startswith("text/plain")
        assert b"database is unavailable for a moment" in response.content


def test_any_other_error_is_still_a_500(db: None, users: dict[str, User]) -> None:
    def broken(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        raise RuntimeError("a bug")

    client = Client(raise_request_exception=False)
    client.force_login(users["admin"])
    with connection.execute_wrapper(broken):
        response = client.get("/api/systems/")

    assert response.status_code == 500
    assert "Retry-After" not in response


def test_the_api_answers_while_the_cache_is_unreachable(
    db: None, users: dict[str, User], settings, caplog: pytest.LogCaptureFixture, monkeypatch
) -> None:
    monkeypatch.setattr("webapp.cache._last_logged", 0.0)  # an earlier test's outage was logged already
    # given the throttles' counts kept in a Redis nothing listens on
    settings.CACHES = {
        "default": {
            "BACKEND": "webapp.cache.FailOpenRedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    settings.THROTTLE_COUNTS = "cache"
    token = create_token(users["admin"], "cli").secret
    client = Client(raise_request_exception=False, headers={"Authorization": f"Token {token}"})

    # when the API is asked, with a good token and a bad one
    good = client.get("/api/systems/")
    bad = Client(raise_request_exception=False, headers={"Authorization": "Token nope"}).get("/api/systems/")

    # then the throttles let it through and the outage is logged
    assert good.status_code == 200
    assert bad.status_code == 403
    assert "cache unreachable" in caplog.text
