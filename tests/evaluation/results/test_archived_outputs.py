"""Archived outputs leave the leaderboard (page, CSV and API), which says how many it left out, and
come back whole when restored."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.outputs.models import ModelOutput
from tests.evaluation.results.hand_computed import SCORES
from tests.evaluation.results.test_leaderboard_pages import store
from tests.factories import JudgeConfigFactory
from webapp.archive import archive, restore


@pytest.fixture
def config(db: None) -> JudgeConfig:
    judge = JudgeConfigFactory.create(name="gpt-judge")
    store(SCORES, judge)
    return judge


def _csv_systems(client, config: JudgeConfig) -> set[str]:
    text = client.get(reverse("evaluation:leaderboard_csv"), {"judge": config.pk}).content.decode()
    return {row["system"] for row in csv.DictReader(io.StringIO(text))}


def test_archiving_a_systems_outputs_takes_it_off_the_leaderboard_until_restored(
    config: JudgeConfig, client_for, users
) -> None:
    client = client_for("admin")
    before = _csv_systems(client, config)
    assert "C" in before
    outputs = list(ModelOutput.objects.filter(system__name="C"))
    judgements = Judgement.objects.filter(output__in=outputs).count()
    for output in outputs:
        archive(output, actor=users["admin"], reason="the system's run used the test gold")

    assert _csv_systems(client, config) == before - {"C"}
    page = client.get(reverse("evaluation:leaderboard"), {"judge": config.pk}).content.decode()
    assert f"{len(outputs)} archived, not counted" in page
    assert "C" not in {
        row["system"] for row in client.get("/api/leaderboard/", {"judge": config.pk}).json()["rows"]
    }
    assert Judgement.objects.filter(output__in=outputs).count() == judgements  # kept, only out of use

    for output in outputs:
        restore(output, actor=users["admin"])
    assert _csv_systems(client, config) == before
    assert (
        "archived, not counted"
        not in client.get(reverse("evaluation:leaderboard"), {"judge": config.pk}).content.decode()
    )
