"""Tokens may expire and may be read-only; a revoked or expired token gets none of the answers kept
for its idempotent writes (a pentest's revoked token still got them replayed)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.outputs.models import System
from webapp.api.tokens import create_token, idempotency_principal, revoke_token
from webapp.models import ApiToken, IdempotentRequest

pytestmark = pytest.mark.django_db


def _client(secret: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {secret}")


def _post_system(client: Client, name: str, key: str = "retry-1") -> Any:
    return client.post(
        "/api/systems/", {"name": name}, content_type="application/json", headers={"Idempotency-Key": key}
    )


def test_a_token_stops_working_when_it_expires(users: Any) -> None:
    new = create_token(users["admin"], "nightly", expires_at=timezone.now() + timedelta(hours=1))
    assert _client(new.secret).get("/api/systems/").status_code == 200
    ApiToken.objects.filter(pk=new.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    refused = _client(new.secret).get("/api/systems/")
    assert refused.status_code == 403
    assert "expired" in refused.json()["detail"]


def test_a_read_only_token_reads_but_never_writes(users: Any) -> None:
    client = _client(create_token(users["admin"], "dashboard", read_only=True).secret)
    assert client.get("/api/systems/").status_code == 200
    for method in ("post", "put", "patch", "delete"):
        refused = getattr(client, method)("/api/systems/", {"name": "X"}, content_type="application/json")
        assert refused.status_code == 403, method
        assert "read-only" in refused.json()["detail"]
    assert _post_system(client, "X").status_code == 403  # an Idempotency-Key changes nothing
    assert not System.objects.exists()
    assert not IdempotentRequest.objects.exists()


def test_revoking_a_token_ends_the_replies_kept_for_it(users: Any) -> None:
    new = create_token(users["admin"], "script")
    client = _client(new.secret)
    assert _post_system(client, "EchoChat").status_code == 201
    assert _post_system(client, "EchoChat")["Idempotent-Replayed"] == "true"

    assert revoke_token(users["admin"], new.token.pk)

    again = _post_system(client, "EchoChat")
    assert again.status_code == 403 and "Idempotent-Replayed" not in again
    assert not IdempotentRequest.objects.filter(principal=idempotency_principal(new.token.digest)).exists()
    assert not revoke_token(users["admin"], new.token.pk)  # only once


def test_an_expired_token_gets_no_kept_reply_either(users: Any) -> None:
    new = create_token(users["admin"], "script")
    client = _client(new.secret)
    assert _post_system(client, "EchoChat").status_code == 201
    ApiToken.objects.filter(pk=new.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    again = _post_system(client, "EchoChat")
    assert again.status_code == 403 and "Idempotent-Replayed" not in again


def test_the_account_page_makes_an_expiring_read_only_token(client_for: Any, users: Any) -> None:
    client = client_for("evaluator")
    page = client.post(reverse("api_tokens"), {"name": "dash", "expires_in_days": "30", "read_only": "on"})
    assert page.status_code == 200
    token = ApiToken.objects.get(user=users["evaluator"])
    assert token.read_only
    assert token.expires_at is not None
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    listed = client.get(reverse("api_tokens")).content.decode()
    assert "read-only" in listed and token.expires_at.strftime("%Y-%m-%d") in listed


def test_the_account_page_refuses_an_expiry_it_does_not_offer(client_for: Any, users: Any) -> None:
    client = client_for("evaluator")
    assert client.post(reverse("api_tokens"), {"name": "x", "expires_in_days": "-3"}).status_code == 400
    assert not ApiToken.objects.filter(user=users["evaluator"]).exists()
