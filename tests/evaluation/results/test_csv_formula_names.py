"""System names that a spreadsheet would run reach every leaderboard CSV as plain text."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from tests.evaluation.results.dialogue_hand_computed import store_dialogues
from tests.evaluation.results.hand_computed import SCORES
from tests.evaluation.results.test_leaderboard_pages import store
from tests.factories import JudgeConfigFactory

RENAMED = {"A": '=HYPERLINK("http://x","y")', "B": "+cmd|' /C calc'!A0", "C": "-2+3"}


@pytest.fixture
def config(db: None) -> JudgeConfig:
    judge = JudgeConfigFactory.create(name="gpt-judge")
    store(SCORES, judge)
    store_dialogues(judge)
    for old, new in RENAMED.items():
        System.objects.filter(name=old).update(name=new)
    return judge


def _systems(text: str) -> set[str]:
    return {row["system"] for row in csv.DictReader(io.StringIO(text))}


def _assert_neutral(text: str, expected: set[str]) -> None:
    names = _systems(text)
    assert names >= {f"'{name}" for name in expected}
    assert not any(name.startswith(("=", "+", "-", "@")) for name in names)


def test_every_leaderboard_csv_neutralises_formula_like_names(config: JudgeConfig, client_for) -> None:
    client = client_for("admin")
    single = set(RENAMED.values())
    dialogue = {RENAMED["A"], RENAMED["B"]}
    page = client.get(reverse("evaluation:leaderboard_csv"), {"judge": config.pk}).content.decode()
    api = client.get(reverse("evaluation:api_leaderboard_csv"), {"judge": config.pk}).content.decode()
    page_turns = client.get(
        reverse("evaluation:leaderboard_csv"), {"judge": config.pk, "set": "dialogues"}
    ).content.decode()
    api_turns = client.get(
        reverse("evaluation:api_leaderboard_csv"), {"judge": config.pk, "set": "dialogues"}
    ).content.decode()
    command = io.StringIO()
    call_command("export_leaderboard", "gpt-judge", stdout=command)
    for text in (page, api, command.getvalue()):
        _assert_neutral(text, single)
    for text in (page_turns, api_turns):
        _assert_neutral(text, dialogue)
    # Numbers keep their meaning: the estimate columns are still numbers a spreadsheet adds up.
    row = next(row for row in csv.DictReader(io.StringIO(page)) if row["system"] == "'" + RENAMED["A"])
    assert row["all_avg"] == "7.4000"
