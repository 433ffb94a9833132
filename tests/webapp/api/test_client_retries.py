"""The echostudio client sends an Idempotency-Key with every write and retries a lost answer with it."""

from __future__ import annotations

from typing import Any

import httpx

from evaluation.outputs.models import System
from webapp.api.tokens import create_token
from webapp.client.session import Studio
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
