"""The echostudio client sends an Idempotency-Key with every write and retries a lost answer with it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from evaluation.outputs.models import System
from webapp.api.tokens import create_token
from webapp.client.session import ClientError, Studio
from webapp.models import User


class LosesTheFirstAnswer(httpx.HTTPTransport):
    """A real connection to the live server whose first answer is lost on the way back, as when a
    web worker is killed after its commit: the write happened, the client saw a connection error."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        response = super().handle_request(request)
        if len(self.sent) == 1:
            response.read()
            raise httpx.ReadError("connection reset by peer", request=request)
        return response


def test_a_write_whose_answer_was_lost_is_retried_and_applied_once(
    live_server: Any, users: dict[str, User]
) -> None:
    studio = Studio(live_server.url, create_token(users["admin"], "cli").secret, quiet=True)
    transport = LosesTheFirstAnswer()
    studio.http = httpx.Client(
        base_url=studio.http.base_url, headers=studio.http.headers, transport=transport
    )

    made = studio.json("POST", "systems/", json={"name": "Retried"})

    assert made["name"] == "Retried"
    assert System.objects.filter(name="Retried").count() == 1
    keys = [request.headers["Idempotency-Key"] for request in transport.sent]
    assert len(keys) == 2 and keys[0] == keys[1]


def test_every_write_gets_its_own_key(live_server: Any, users: dict[str, User]) -> None:
    studio = Studio(live_server.url, create_token(users["admin"], "cli").secret, quiet=True)
    transport = httpx.HTTPTransport()
    seen: list[str] = []
    studio.http = httpx.Client(
        base_url=studio.http.base_url,
        headers=studio.http.headers,
        transport=transport,
        event_hooks={"request": [lambda request: seen.append(request.headers.get("Idempotency-Key", ""))]},
    )
    studio.json("POST", "systems/", json={"name": "One"})
    studio.json("POST", "systems/", json={"name": "Two"})
    studio.json("GET", "systems/")
    assert seen[0] and seen[1] and seen[0] != seen[1]
    assert seen[2] == ""
    assert System.objects.filter(name__in=["One", "Two"]).count() == 2


class UnavailableAtFirst(httpx.HTTPTransport):
    """The live server, which answers the first `count` requests as it does while its database
    restarts: 503 with Retry-After (webapp.outages), having changed nothing."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        if len(self.sent) <= self.count:
            return httpx.Response(503, headers={"Retry-After": "2"}, json={"detail": "down", "problems": []})
        return super().handle_request(request)


def test_a_write_answered_503_is_sent_again_after_backing_off_and_lands_once(
    live_server: Any, users: dict[str, User], monkeypatch
) -> None:
    studio = Studio(live_server.url, create_token(users["admin"], "cli").secret, quiet=True)
    transport = UnavailableAtFirst(2)
    studio.http = httpx.Client(
        base_url=studio.http.base_url, headers=studio.http.headers, transport=transport
    )
    waits: list[float] = []
    monkeypatch.setattr(studio, "sleep", waits.append)

    made = studio.json("POST", "systems/", json={"name": "After the restart"})

    assert made["name"] == "After the restart"
    assert System.objects.filter(name="After the restart").count() == 1
    assert len({request.headers["Idempotency-Key"] for request in transport.sent}) == 1
    # The server's Retry-After (2 s) is longer than the first waits of the backoff (0.5 s, 1 s).
    assert waits == [2.0, 2.0]


def test_a_server_down_for_longer_than_every_retry_is_reported(
    live_server: Any, users: dict[str, User], monkeypatch
) -> None:
    studio = Studio(live_server.url, create_token(users["admin"], "cli").secret, quiet=True)
    studio.http = httpx.Client(
        base_url=studio.http.base_url, headers=studio.http.headers, transport=UnavailableAtFirst(99)
    )
    monkeypatch.setattr(studio, "sleep", lambda seconds: None)

    with pytest.raises(ClientError, match="HTTP 503: down"):
        studio.json("GET", "systems/")
