"""Personal API tokens: made and revoked on the account page, stored hashed, last use noted."""

from __future__ import annotations

import re

from django.test import Client
from django.urls import reverse

from webapp.api.tokens import create_token, digest_of
from webapp.models import ApiToken


def _created_secret(client: Client) -> str:
    page = client.post(reverse("api_tokens"), {"name": "pipeline"}).content.decode()
    found = re.search(r'data-testid="token-secret">([^<]+)<', page)
    assert found
    return found.group(1)


def test_the_account_page_shows_a_new_token_once_and_stores_only_its_digest(client_for, users) -> None:
    client = client_for("evaluator")
    secret = _created_secret(client)
    token = ApiToken.objects.get(user=users["evaluator"])
    assert token.digest == digest_of(secret) and secret not in token.digest
    assert secret not in client.get(reverse("api_tokens")).content.decode()


def test_a_token_authenticates_and_records_when_it_was_last_used(users) -> None:
    new = create_token(users["admin"], "script")
    assert new.token.last_used_at is None
    response = Client(HTTP_AUTHORIZATION=f"Token {new.secret}").get("/api/systems/")
    assert response.status_code == 200
    new.token.refresh_from_db()
    assert new.token.last_used_at is not None


def test_a_revoked_token_is_refused_from_the_next_request(client_for, users) -> None:
    client = client_for("admin")
    secret = _created_secret(client)
    script = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert script.get("/api/systems/").status_code == 200
    token = ApiToken.objects.get(user=users["admin"])
    client.post(reverse("api_token_revoke", args=[token.pk]))
    response = script.get("/api/systems/")
    assert response.status_code == 403
    assert response.json() == {"detail": "This token is unknown or revoked, or has expired.", "problems": []}


def test_nobody_revokes_someone_elses_token(client_for, users) -> None:
    token = create_token(users["admin"], "script").token
    client_for("lead").post(reverse("api_token_revoke", args=[token.pk]))
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_deactivated_users_token_stops_working(users) -> None:
    new = create_token(users["admin"], "script")
    users["admin"].is_active = False
    users["admin"].save()
    assert Client(HTTP_AUTHORIZATION=f"Token {new.secret}").get("/api/systems/").status_code == 403


def test_the_token_pages_need_a_login(db) -> None:
    assert Client().get(reverse("api_tokens")).status_code == 302
    assert Client().post(reverse("api_token_revoke", args=[1])).status_code == 302
