"""The dialogue API: every role by token, actors only their own, import all or nothing, export."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotation.recording.models import Dialogue
from tests.factories import DialogueFactory
from webapp.api.tokens import create_token
from webapp.models import User
from webapp.roles import Role

ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole")


@pytest.fixture
def clients(users: dict[str, User]) -> dict[str, Client]:
    return {
        name: Client(HTTP_AUTHORIZATION=f"Token {create_token(user, 'tests').secret}")
        for name, user in users.items()
    }


@pytest.fixture
def dialogues(users: dict[str, User], make_user) -> None:
    DialogueFactory.create(external_id="ED-MINE", turns=3, turns__actor=users["actor"])
    DialogueFactory.create(
        external_id="ED-THEIRS", turns=2, turns__actor=make_user(Role.VOICE_ACTOR, "voice2")
    )


def jsonl(*ids: str) -> bytes:
    turn = {
        "text": "Hello.",
        "scenario": "implicit",
        "target_emotion": "sad",
        "expected_strategy": "validation",
    }
    return "".join(json.dumps({"dialogue_id": i, "turns": [turn, turn]}) + "\n" for i in ids).encode()


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("get", "/api/dialogues/", {"admin", "actor"}),
        ("get", "/api/dialogues/ED-MINE/", {"admin", "actor"}),
        ("get", "/api/dialogues/export/", {"admin"}),
        ("post", "/api/dialogues/", {"admin"}),
    ],
)
def test_each_role_is_let_in_or_refused(
    dialogues, clients, method: str, path: str, allowed: set[str]
) -> None:
    for role in ROLES:
        if method == "post":
            response = clients[role].post(path, data=jsonl(f"ED-{role}"), content_type="application/x-ndjson")
        else:
            response = clients[role].get(path)
        expected_ok = role in allowed
        assert (response.status_code < 400) == expected_ok, (role, response.status_code)
        if not expected_ok:
            assert response.status_code == 403 and "detail" in response.json()


def test_anonymous_callers_are_refused(dialogues) -> None:
    for path in ("/api/dialogues/", "/api/dialogues/ED-MINE/", "/api/dialogues/export/"):
        assert Client().get(path).status_code == 403


def test_an_actor_lists_and_reads_only_their_own_without_names(dialogues, clients) -> None:
    listing = clients["actor"].get("/api/dialogues/").json()
    theirs = clients["actor"].get("/api/dialogues/ED-THEIRS/")

    assert [row["external_id"] for row in listing["results"]] == ["ED-MINE"]
    assert "actor" not in listing["results"][0]
    assert theirs.status_code == 404 and set(theirs.json()) == {"detail", "problems"}


def test_an_admin_reads_a_dialogue_with_its_turns_in_order(dialogues, clients) -> None:
    body = clients["admin"].get("/api/dialogues/ED-THEIRS/").json()

    assert body["actor"] == "voice2"
    assert [turn["turn"] for turn in body["turns"]] == [1, 2]
    assert body["turns"][1]["external_id"] == "ED-THEIRS.t2"
    assert body["turns"][0]["expected_strategy"] == "emotional validation"
    assert body["turns"][0]["state"] == "recording"


def test_the_list_pages_by_cursor(db: None, clients) -> None:
    for number in range(3):
        DialogueFactory.create(external_id=f"ED-{number}", turns=1)

    first = clients["admin"].get("/api/dialogues/?page_size=2").json()
    second = clients["admin"].get(first["next"]).json()

    assert len(first["results"]) == 2 and len(second["results"]) == 1 and second["next"] is None
    assert "cursor=" in first["next"]


def test_an_import_with_a_bad_line_writes_nothing_and_says_where(db: None, clients) -> None:
    data = jsonl("ED-1") + b'{"dialogue_id": "ED-2", "turns": []}\n'

    response = clients["admin"].post("/api/dialogues/", data=data, content_type="application/x-ndjson")

    assert response.status_code == 400
    body = response.json()
    assert body["detail"].startswith("Nothing was imported")
    assert body["problems"] == [
        {"row": 2, "field": "turns", "message": "Line 2, turns: must be a list of 1 or more turns."}
    ]
    assert not Dialogue.objects.exists()


def test_an_import_creates_then_export_gives_it_back(db: None, clients) -> None:
    created = clients["admin"].post(
        "/api/dialogues/", data=jsonl("ED-1", "ED-2"), content_type="application/x-ndjson"
    )
    again = clients["admin"].post("/api/dialogues/", data=jsonl("ED-1"), content_type="application/x-ndjson")
    exported = b"".join(clients["admin"].get("/api/dialogues/export/").streaming_content).decode()

    assert created.status_code == 201 and created.json()["created"] == 2
    assert again.status_code == 200 and again.json()["unchanged"] == 1
    assert [json.loads(row)["dialogue_id"] for row in exported.splitlines()] == ["ED-1", "ED-2"]
