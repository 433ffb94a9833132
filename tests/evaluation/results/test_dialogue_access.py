"""Who may see the dialogue results: admins only, as every results page (they name the systems)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.models import Item
from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from tests.factories import DialogueFactory, JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from webapp.api.tokens import create_token
from webapp.models import User

ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole")
DIALOGUES = {"set": "dialogues"}


@pytest.fixture
def turn(users: dict[str, User]) -> Item:
    dialogue = DialogueFactory.create(external_id="ED-1", turns=2)
    system = System.objects.create(name="Hidden-Name", text_only=True)
    judge = JudgeConfigFactory.create(name="judge")
    for item in dialogue.turns.all():
        output = ModelOutputFactory.create(system=system, item=item)
        JudgementFactory.create(output=output, stage="perception", judge_config=judge, score=7)
    return dialogue.turns.get(turn=2)


def _pages(turn: Item) -> list[tuple[str, dict[str, str]]]:
    return [
        (reverse("evaluation:leaderboard"), DIALOGUES),
        (reverse("evaluation:leaderboard"), {**DIALOGUES, "fall_threshold": "5"}),
        (reverse("evaluation:leaderboard_csv"), DIALOGUES),
        (reverse("evaluation:leaderboard_tex"), DIALOGUES),
        (reverse("evaluation:error_propagation"), DIALOGUES),
        (reverse("evaluation:item_list"), DIALOGUES),
        (reverse("evaluation:item_detail", args=[turn.pk]), {}),
    ]


def test_dialogue_pages_open_for_admins_only(client: Client, client_for, turn: Item) -> None:
    for url, parameters in _pages(turn):
        anonymous = client.get(url, parameters)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
        got = {role: client_for(role).get(url, parameters).status_code for role in ROLES}
        assert got == {role: 200 if role == "admin" else 403 for role in ROLES}, url


@pytest.mark.parametrize(
    "path",
    ["/api/leaderboard/", "/api/leaderboard/csv/", "/api/leaderboard/latex/", "/api/error-propagation/"],
)
def test_the_dialogue_set_of_the_api_is_for_admins_only(
    users: dict[str, User], turn: Item, path: str
) -> None:
    named: dict[str, Any] = {**DIALOGUES, "judge": JudgeConfig.objects.get(name="judge").pk}  # needs a judge
    assert Client().get(path, named).status_code == 403
    for role in ROLES:
        client = Client(HTTP_AUTHORIZATION=f"Token {create_token(users[role], 'tests').secret}")
        response = client.get(path, named)
        assert response.status_code == (200 if role == "admin" else 403), (role, path)


def test_an_evaluators_refusal_names_no_system(client_for, turn: Item) -> None:
    for url, parameters in _pages(turn):
        assert b"Hidden-Name" not in client_for("evaluator").get(url, parameters).content
