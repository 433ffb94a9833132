"""API writes with an Idempotency-Key: a retry is answered with the first answer, never applied twice."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import close_old_connections, connection
from django.test import Client

from evaluation.outputs.models import System
from webapp.api.tokens import create_token
from webapp.idempotency import purge_expired_keys
from webapp.models import IdempotentRequest, User

KEY = "4f1c2d9e-retry-me"


def post_system(client: Client, name: str, key: str | None = KEY) -> Any:
    headers = {"Idempotency-Key": key} if key is not None else {}
    return client.post("/api/systems/", {"name": name}, content_type="application/json", headers=headers)


def token_client(user: User) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {create_token(user, 'retries').secret}")


def test_a_retried_write_is_answered_from_the_first_and_applied_once(users: dict[str, User]) -> None:
    client = token_client(users["admin"])
    first = post_system(client, "EchoChat")
    again = post_system(client, "EchoChat")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert System.objects.filter(name="EchoChat").count() == 1


def test_without_a_key_a_second_write_is_a_new_write(client_for: Callable[[str], Client]) -> None:
    client = client_for("admin")
    assert post_system(client, "A", key=None).status_code == 201
    assert post_system(client, "A", key=None).status_code == 400  # the name is taken: it ran again


def test_the_same_key_for_a_different_request_is_refused(client_for: Callable[[str], Client]) -> None:
    client = client_for("admin")
    assert post_system(client, "First").status_code == 201
    reused = post_system(client, "Second")
    assert reused.status_code == 422
    assert "different request" in reused.json()["detail"]
    assert not System.objects.filter(name="Second").exists()


def test_keys_belong_to_who_sent_them(make_user: Callable[..., User], users: dict[str, User]) -> None:
    from webapp.roles import Role

    other_admin = make_user(Role.ADMIN, "other-admin")
    assert post_system(token_client(users["admin"]), "Mine").status_code == 201
    theirs = post_system(token_client(other_admin), "Theirs")
    assert theirs.status_code == 201
    assert "Idempotent-Replayed" not in theirs
    assert set(System.objects.values_list("name", flat=True)) >= {"Mine", "Theirs"}


def test_a_refused_login_keeps_no_answer(users: dict[str, User]) -> None:
    # A request refused before it ran (403) says nothing about the write: the key stays unused.
    refused = Client(HTTP_AUTHORIZATION="Token es_not-a-token")
    assert post_system(refused, "X").status_code == 403
    assert not IdempotentRequest.objects.exists()


def test_a_client_error_is_replayed_as_it_was(client_for: Callable[[str], Client]) -> None:
    client = client_for("admin")
    post_system(client, "Taken", key="other")
    first = post_system(client, "Taken")
    assert first.status_code == 400
    again = post_system(client, "Taken")
    assert (again.status_code, again.json()) == (400, first.json())
    assert again["Idempotent-Replayed"] == "true"


def test_an_overlong_key_is_refused(client_for: Callable[[str], Client]) -> None:
    response = post_system(client_for("admin"), "Y", key="k" * 201)
    assert response.status_code == 400
    assert not System.objects.filter(name="Y").exists()


def test_expired_keys_are_forgotten(client_for: Callable[[str], Client], settings: Any) -> None:
    client = client_for("admin")
    post_system(client, "Old")
    IdempotentRequest.objects.update(created_at="2000-01-01T00:00:00Z")
    assert purge_expired_keys() == 1


def test_two_copies_at_once_apply_once(transactional_db: None, users: dict[str, User]) -> None:
    # Two copies of one request sent together (a client retrying while its first try still runs):
    # the key's unique index makes the second wait for the first and replay its answer.
    secret = create_token(users["admin"], "race").secret
    statuses: list[int] = []
    errors: list[BaseException] = []

    def send() -> None:
        try:
            statuses.append(post_system(Client(HTTP_AUTHORIZATION=f"Token {secret}"), "Twice").status_code)
        except BaseException as error:
            errors.append(error)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert statuses == [201, 201, 201, 201]
    assert System.objects.filter(name="Twice").count() == 1


@pytest.mark.parametrize("method", ["get"])
def test_reads_are_untouched(client_for: Callable[[str], Client], method: str) -> None:
    response = getattr(client_for("admin"), method)("/api/systems/", HTTP_IDEMPOTENCY_KEY=KEY)
    assert response.status_code == 200
    assert not IdempotentRequest.objects.exists()
