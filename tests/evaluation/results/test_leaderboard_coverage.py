"""A system that answered 3 of the 9 items: its cells carry n/N everywhere (pure table, page, CSV,
LaTeX, API, client) and it is never ranked above the system that answered all 9.

By hand, 9 items (implicit, neutral, conflict and intense 2 each, shift 1):
  Complete answers all 9: perception 6, reasoning 6, content 3, audio 3 -> All (6 + 6 + 6) / 3 = 6.00,
      36 judgements of 36 expected.
  Partial answers i1 (implicit), i3 (neutral), i5 (conflict) only, none in intense or shift:
      perception 8, reasoning 8, content 4, audio 4 -> All 8.00 over 12 of 36, Implicit 8.00 over 1 of 2.
Partial's means are higher, on items Complete also answered, but they stand on a third of the items:
it is flagged not comparable and unmarked; Complete is best.
"""

from __future__ import annotations

import csv
import io
import json
import re
from types import SimpleNamespace
from typing import Any, cast

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from evaluation.results.leaderboard import StageRecord, build_leaderboard, to_csv, to_latex
from evaluation.results.propagation import error_propagation
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from webapp.client.commands import leaderboard as client_leaderboard
from webapp.client.session import Studio

ITEMS = {
    "i1": "implicit",
    "i2": "implicit",
    "i3": "audio-dominant",
    "i4": "audio-dominant",
    "i5": "modality-conflict",
    "i6": "modality-conflict",
    "i7": "high-arousal",
    "i8": "high-arousal",
    "i9": "emotion-shift",
}
ANSWERED = {"Complete": list(ITEMS), "Partial": ["i1", "i3", "i5"]}
SCORES = {
    "Complete": {"perception": 6.0, "reasoning": 6.0, "response_content": 3.0, "response_audio": 3.0},
    "Partial": {"perception": 8.0, "reasoning": 8.0, "response_content": 4.0, "response_audio": 4.0},
}


def _stage(stage: str, item: str) -> str:
    return "shift_perception" if stage == "perception" and ITEMS[item] == "emotion-shift" else stage


def records() -> list[StageRecord]:
    return [
        StageRecord(system, item, ITEMS[item], _stage(stage, item), score)
        for system, items in ANSWERED.items()
        for item in items
        for stage, score in SCORES[system].items()
    ]


def test_the_partial_system_carries_n_of_n_and_is_not_ranked() -> None:
    complete, partial = build_leaderboard(records(), ["Complete", "Partial"]).rows
    every = partial.cells["all_avg"]
    assert (every.value, every.n_valid, every.n_expected, every.comparable) == (8.0, 12, 36, False)
    assert (every.mark, complete.cells["all_avg"].mark) == (None, "best")
    assert complete.cells["all_avg"].coverage.text == "36/36" and complete.cells["all_avg"].comparable
    implicit = partial.cells["perception_implicit"]
    assert (implicit.value, implicit.coverage.text, implicit.mark) == (8.0, "1/2", None)
    assert complete.cells["perception_implicit"].mark == "best"
    # Intense: no answer at all, "-" over 0 of 2
    assert partial.cells["perception_high_arousal"].coverage.text == "0/2"
    # Every column: Partial is never marked, Complete is best wherever it has a value
    assert {cell.mark for cell in partial.cells.values()} == {None}
    assert {cell.mark for cell in complete.cells.values()} == {"best"}


def test_a_judge_error_counts_as_judged_not_as_missing() -> None:
    # Complete's judge failed on one reasoning judgement: it was measured on every item (the error
    # is excluded and counted, as the paper aggregates over valid samples), so it stays ranked.
    rows = [
        StageRecord(r.system, r.item_id, r.scenario, r.stage, None)
        if (r.system, r.item_id, r.stage) == ("Complete", "i2", "reasoning")
        else r
        for r in records()
    ]
    complete, _ = build_leaderboard(rows, ["Complete", "Partial"]).rows
    reasoning = complete.cells["reasoning_avg"]
    assert (reasoning.n_valid, reasoning.n_excluded, reasoning.n_expected) == (8, 1, 9)
    assert reasoning.comparable and reasoning.mark == "best"


def test_expected_items_may_be_given() -> None:
    # Expected items come from the database (items any system was asked); here, a tenth item
    # nobody answered makes Complete partial too.
    expected = {scenario: list(ITEMS.values()).count(scenario) for scenario in set(ITEMS.values())}
    expected["implicit"] += 1
    complete, _ = build_leaderboard(records(), ["Complete", "Partial"], expected).rows
    assert complete.cells["perception_implicit"].coverage.text == "2/3"
    assert complete.cells["perception_implicit"].mark is None
    assert complete.cells["perception_audio_dominant"].mark == "best"


def test_pure_csv_and_latex_carry_n_of_n() -> None:
    table = build_leaderboard(records(), ["Complete", "Partial"])
    rows = {row["system"]: row for row in csv.DictReader(io.StringIO(to_csv(table)))}
    assert [
        rows["Partial"][f"all_avg{suffix}"] for suffix in ("", "_n_valid", "_n_expected", "_comparable")
    ] == [
        "8.0000",
        "12",
        "36",
        "no",
    ]
    latex = to_latex(table)
    assert r"Partial & 8.00$^{\dagger}$ & 8.00$^{\dagger}$ & 8.00$^{\dagger}$ & - & - &" in latex
    assert r"Complete & \textbf{6.00} &" in latex
    assert "Over 9 items per stage" in latex
    assert "Partial: Perception Implicit 1/2, Perception Neutral 1/2" in latex
    assert "All Avg. 12/36" in latex and "Complete:" not in latex


# --- Stored judgements: page, exports, API and client ---------------------------------------------


@pytest.fixture
def judge(db: None) -> JudgeConfig:
    config = JudgeConfigFactory.create(name="j")
    items = {
        key: BenchmarkItemFactory.create(external_id=key, scenario=value) for key, value in ITEMS.items()
    }
    for name, answered in ANSWERED.items():
        system = System.objects.create(name=name)
        for key in answered:
            output = ModelOutputFactory.create(system=system, item=items[key], response_audio_key="")
            for stage, score in SCORES[name].items():
                JudgementFactory.create(
                    output=output, stage=_stage(stage, key), judge_config=config, score=score
                )
    return config


def _row(html: str, system: str) -> str:
    match = re.search(rf'<tr data-system="{system}">(.*?)</tr>', html, re.S)
    assert match is not None
    return match.group(1)


class _Studio:
    """The client's Studio, answered by Django's test client."""

    def __init__(self, client: Client, judge: JudgeConfig) -> None:
        self.client, self.judge = client, judge

    def one_named(self, path: str, name: str, what: str) -> dict[str, Any]:
        return {"id": self.judge.pk}

    def request(self, method: str, path: str, params: dict[str, Any]) -> SimpleNamespace:
        return SimpleNamespace(text=self.client.get(f"/api/{path}", params).content.decode())

    def json(self, method: str, path: str, params: dict[str, Any]) -> Any:
        return self.client.get(f"/api/{path}", params).json()


def test_every_rendering_carries_n_of_n_and_ranks_only_the_complete_system(
    judge: JudgeConfig, client_for
) -> None:
    admin = client_for("admin")
    query = {"judge": judge.pk}
    # given the page
    html = admin.get(reverse("evaluation:leaderboard"), query).content.decode()
    partial = _row(html, "Partial")
    assert (
        '<td class="num" data-comparable="false" title="12 valid of 36 expected, 0 excluded, not comparable">'
        '8.00<span class="not-comparable">†</span><span class="coverage" data-testid="coverage">12/36</span>'
    ) in partial
    assert "data-mark" not in partial
    assert (
        'data-mark="best" title="36 valid of 36 expected, 0 excluded">6.00'
        '<span class="coverage" data-testid="coverage">36/36</span>'
    ) in _row(html, "Complete")
    assert 'data-testid="coverage-note"' in html
    found = re.search(r'id="leaderboard-chart" type="application/json">(.*?)</script>', html)
    assert found is not None
    chart = json.loads(found.group(1))
    every = next(series for series in chart["series"] if series["label"] == "All")
    assert (every["coverage"], every["comparable"]) == (["36/36", "12/36"], [True, False])
    # CSV and LaTeX, from the page and the API
    for csv_url, tex_url in (
        (reverse("evaluation:leaderboard_csv"), reverse("evaluation:leaderboard_tex")),
        ("/api/leaderboard/csv/", "/api/leaderboard/latex/"),
    ):
        rows = {
            row["system"]: row
            for row in csv.DictReader(io.StringIO(admin.get(csv_url, query).content.decode()))
        }
        assert (rows["Partial"]["all_avg_n_valid"], rows["Partial"]["all_avg_n_expected"]) == ("12", "36")
        assert (rows["Partial"]["all_avg_comparable"], rows["Complete"]["all_avg_comparable"]) == (
            "no",
            "yes",
        )
        latex = admin.get(tex_url, query).content.decode()
        assert r"Partial & 8.00$^{\dagger}$" in latex and r"Complete & \textbf{6.00}" in latex
        assert "All Avg. 12/36" in latex
    # the API
    api = {row["system"]: row for row in admin.get("/api/leaderboard/", query).json()["rows"]}
    assert api["Partial"]["cells"]["all_avg"] == {
        "value": 8.0,
        "n_valid": 12,
        "n_excluded": 0,
        "n_expected": 36,
        "comparable": False,
        "mark": None,
        "tied": False,
    }
    assert api["Complete"]["cells"]["all_avg"]["mark"] == "best"
    # the client's plain table
    printed = client_leaderboard(cast(Studio, _Studio(admin, judge)), "table", judge_name="j")
    lines = {
        cells[0]: cells
        for line in printed.split("\n\n")[0].splitlines()
        if (cells := re.split(r"\s{2,}", line.strip()))
    }
    # Implicit, ..., All Avg., Excluded
    assert (lines["Partial"][1], lines["Partial"][-2:]) == ("8.00† 1/2", ["8.00† 12/36", "0"])
    assert (lines["Complete"][1], lines["Complete"][-2:]) == ("6.00 2/2", ["6.00 36/36", "0"])
    assert "†: not comparable" in printed


def test_table_eight_carries_n_of_n() -> None:
    figures = error_propagation(records())
    assert (figures["Partial"].coverage.text, figures["Partial"].comparable) == ("3/9", False)
    assert (figures["Complete"].coverage.text, figures["Complete"].comparable) == ("9/9", True)


def test_table_eight_page_and_api_carry_n_of_n(judge: JudgeConfig, client_for) -> None:
    admin = client_for("admin")
    html = admin.get(reverse("evaluation:error_propagation"), {"judge": judge.pk}).content.decode()
    assert (
        '<td class="num" data-testid="items" data-comparable="false" title="3 items with every chain stage'
        ' judged, of the 9 expected, not comparable">3/9<span class="not-comparable">†</span></td>'
    ) in _row(html, "Partial")
    assert (
        'data-testid="items" title="9 items with every chain stage judged, of the 9 expected">9/9</td>'
        in (_row(html, "Complete"))
    )
    api = {row["system"]: row for row in admin.get("/api/error-propagation/", {"judge": judge.pk}).json()}
    assert [(api[name]["n_items"], api[name]["n_expected"], api[name]["comparable"]) for name in api] == [
        (9, 9, True),
        (3, 9, False),
    ]
