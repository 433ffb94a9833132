"""Who may use each API endpoint: the same roles as the pages, by token as by session."""

from __future__ import annotations

import pytest
from django.test import Client

from webapp.api.tokens import create_token

ADMIN = {"admin"}
GOLD_KEEPERS = {"admin", "lead"}
ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole")

# (method, path, roles allowed): every endpoint this API adds.
ENDPOINTS = [
    ("get", "/api/items/", ADMIN),
    ("post", "/api/items/", ADMIN),
    ("get", "/api/assignments/", ADMIN),
    ("post", "/api/assignments/", ADMIN),
    ("get", "/api/items/EE-none/", GOLD_KEEPERS),
    ("get", "/api/gold/", GOLD_KEEPERS),
    ("get", "/api/gold/export/?as=jsonl", GOLD_KEEPERS),
    ("get", "/api/systems/", ADMIN),
    ("post", "/api/systems/", ADMIN),
    ("get", "/api/systems/999/", ADMIN),
    ("get", "/api/systems/999/outputs/", ADMIN),
    ("post", "/api/systems/999/outputs/", ADMIN),
    ("get", "/api/judges/", ADMIN),
    ("get", "/api/judge-runs/", ADMIN),
    ("post", "/api/judge-runs/", ADMIN),
    ("get", "/api/judge-runs/999/", ADMIN),
    ("post", "/api/judge-runs/999/cancel/", ADMIN),
    ("get", "/api/judge-runs/999/results/", ADMIN),
    ("get", "/api/leaderboard/", ADMIN),
    ("get", "/api/leaderboard/csv/", ADMIN),
    ("get", "/api/leaderboard/latex/", ADMIN),
    ("get", "/api/error-propagation/", ADMIN),
    ("get", "/api/studies/", ADMIN),
    ("post", "/api/studies/", ADMIN),
    ("get", "/api/studies/999/", ADMIN),
    ("get", "/api/studies/999/results/", ADMIN),
    ("get", "/api/jobs/", ADMIN),
    ("post", "/api/jobs/", ADMIN),
    ("get", "/api/jobs/999/", ADMIN),
    ("post", "/api/jobs/999/cancel/", ADMIN),
    ("get", "/api/builds/999/", ADMIN),
    ("get", "/api/dialogues/", {"admin", "actor"}),
    ("post", "/api/dialogues/", ADMIN),
    ("get", "/api/dialogues/EE-none/", {"admin", "actor"}),
    ("get", "/api/dialogues/export/", ADMIN),
]


@pytest.fixture
def tokens(users) -> dict[str, str]:
    return {name: create_token(user, "tests").secret for name, user in users.items()}


@pytest.mark.parametrize(("method", "path", "allowed"), ENDPOINTS)
def test_each_role_is_let_in_or_refused_as_on_the_pages(tokens, method, path, allowed) -> None:
    for role in ROLES:
        client = Client(HTTP_AUTHORIZATION=f"Token {tokens[role]}")
        if method == "post":
            response = client.post(path, data={}, content_type="application/json")
        else:
            response = client.get(path)
        if role in allowed:
            assert response.status_code not in (401, 403), (role, response.content)
        else:
            assert response.status_code == 403, (role, response.status_code)
            assert set(response.json()) == {"detail", "problems"}


@pytest.mark.parametrize(("method", "path", "allowed"), ENDPOINTS)
def test_nobody_anonymous_gets_in(db, method, path, allowed) -> None:
    response = getattr(Client(), method)(path)
    assert response.status_code == 403
    assert response.json()["problems"] == []


def test_a_session_login_works_beside_tokens(client_for) -> None:
    assert client_for("admin").get("/api/systems/").status_code == 200
    assert client_for("evaluator").get("/api/systems/").status_code == 403
