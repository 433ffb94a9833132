"""The dialogue set of the results: per-turn Table 2 and dialogue-level scores from stored judgements,
on the set computed by hand, beside a single-turn set whose numbers must not move."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from evaluation.results.dialogues.reports import dialogue_leaderboard
from evaluation.results.dialogues.scores import dialogue_board
from evaluation.results.reports import error_propagation_table, leaderboard
from tests.evaluation.results.dialogue_hand_computed import (
    EXPECTED_PER_TURN,
    EXPECTED_SUMMARIES,
    store_dialogues,
    turn_records,
)
from tests.evaluation.results.hand_computed import EXPECTED_A, SCORES, cell_values
from tests.evaluation.results.test_leaderboard_pages import store
from tests.factories import JudgeConfigFactory


@pytest.fixture
def config(db: None) -> JudgeConfig:
    judge = JudgeConfigFactory.create(name="gpt-judge")
    store(SCORES, judge)  # the single-turn set: systems A, B, C
    store_dialogues(judge)  # A and B also answer two dialogues
    return judge


def test_single_turn_numbers_do_not_move_when_dialogues_are_judged(config: JudgeConfig) -> None:
    a, b, c = leaderboard("echoeval-v1", config).table.rows
    assert cell_values(a) == pytest.approx(EXPECTED_A)
    assert (cell_values(b)["response_content"], cell_values(b)["all_avg"]) == (pytest.approx(3.4), None)
    assert (cell_values(c)["perception_avg"], cell_values(c)["all_avg"]) == (7.0, None)


def test_dialogue_figures_from_the_database_match_the_hand_computed_ones(config: JudgeConfig) -> None:
    board = dialogue_leaderboard("echoeval-v1", config)
    assert [system.name for system in board.systems] == ["A", "B"]
    by_hand = dialogue_board(turn_records(), ["A", "B"])
    assert (board.board.per_turn, board.board.summaries) == (by_hand.per_turn, by_hand.summaries)
    for turn, expected in EXPECTED_PER_TURN.items():
        rows = {row.system: row for row in board.board.per_turn[turn].rows}
        for system, values in expected.items():
            assert {key: rows[system].cells[key].value for key in values} == pytest.approx(values)
    summaries = {summary.system: summary for summary in board.board.summaries}
    assert summaries["A"].mean == pytest.approx(EXPECTED_SUMMARIES["A"]["mean"])
    # B's audio was not judged: no turn has a 10-point overall score, so none falls below 6.0
    assert (summaries["B"].n_dialogues, summaries["B"].share_fell, summaries["B"].fell_at) == (0, None, {})


def test_the_dialogue_page_shows_turn_tables_the_dialogue_scores_and_the_chart(
    config: JudgeConfig, client_for
) -> None:
    response = client_for("admin").get(
        reverse("evaluation:leaderboard"), {"judge": config.pk, "set": "dialogues"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    scores = re.search(r'<table class="table" id="dialogue-scores">(.*?)</table>', html, re.S)
    assert scores is not None
    row_a = re.search(r'<tr data-system="A">(.*?)</tr>', scores.group(1), re.S)
    row_b = re.search(r'<tr data-system="B">(.*?)</tr>', scores.group(1), re.S)
    assert row_a is not None and row_b is not None
    assert 'data-testid="dialogue-mean">7.53<' in row_a.group(1) and 'title="1 of 2">50%<' in row_a.group(1)
    assert re.findall(r'data-testid="fell-at-\d">(\d)<', row_a.group(1)) == ["0", "0", "1"]
    assert 'data-testid="dialogue-mean">-<' in row_b.group(1) and 'title="0 of 0">-<' in row_b.group(1)
    # the dialogues each system was judged on, of the two expected of every system
    assert ">2/2</td>" in row_a.group(1) and ">0/2</td>" in row_b.group(1)
    assert re.findall(r'data-testid="fell-at-\d">(\d)<', row_b.group(1)) == ["0", "0", "0"]
    assert 'data-testid="fall-threshold">6.0<' in html
    for turn in (1, 2, 3):
        assert f'id="leaderboard-turn-{turn}"' in html
    turn_one = re.search(r'id="leaderboard-turn-1"(.*?)</table>', html, re.S)
    assert turn_one is not None and 'title="8 valid of 8 expected, 0 excluded">8.33<' in turn_one.group(1)
    chart_data = re.search(r'<script id="turn-chart" type="application/json">(.*?)</script>', html, re.S)
    assert chart_data is not None
    chart = json.loads(chart_data.group(1))
    assert chart["labels"] == ["Turn 1", "Turn 2", "Turn 3"]
    # B (audio not judged) has no overall score on any turn: no line, named under the chart
    assert [series["label"] for series in chart["series"]] == ["A"] and chart["not_drawn"] == ["B"]
    assert chart["series"][0]["data"] == pytest.approx([25 / 3, 7.0, 20 / 3])
    assert "js/turn_chart.js" in html and 'id="leaderboard"' not in html


def test_the_fall_threshold_is_a_parameter(config: JudgeConfig, client_for) -> None:
    client = client_for("admin")
    html = client.get(
        reverse("evaluation:leaderboard"), {"judge": config.pk, "set": "dialogues", "fall_threshold": "8.5"}
    ).content.decode()
    assert 'data-testid="fall-threshold">8.5<' in html
    row_a = re.search(r'<tr data-system="A">(.*?)</tr>', html, re.S)
    assert row_a is not None and re.findall(r'data-testid="fell-at-\d">(\d)<', row_a.group(1)) == [
        "1",
        "0",
        "1",
    ]
    refused = client.get(
        reverse("evaluation:leaderboard"), {"judge": config.pk, "set": "dialogues", "fall_threshold": "11"}
    ).content.decode()
    assert "Ensure this value is less than or equal to 10.0. Showing the default, 6.0." in refused
    assert 'id="dialogue-scores"' in refused


def test_the_single_page_is_the_default_and_lists_no_dialogue(config: JudgeConfig, client_for) -> None:
    html = client_for("admin").get(reverse("evaluation:leaderboard"), {"judge": config.pk}).content.decode()
    assert 'id="leaderboard"' in html and "dialogue-scores" not in html and "fall_threshold" not in html
    assert re.search(r'<select name="set"[^>]*>\s*<option value="single"', html)


def test_the_dialogue_page_runs_a_fixed_number_of_queries(config: JudgeConfig, client_for) -> None:
    client = client_for("admin")
    url = reverse("evaluation:leaderboard")
    with CaptureQueriesContext(connection) as small:
        client.get(url, {"judge": config.pk, "set": "dialogues"})
    store_dialogues_again = JudgeConfigFactory.create(name="other")
    with CaptureQueriesContext(connection) as large:
        client.get(url, {"judge": config.pk, "set": "dialogues"})
    assert store_dialogues_again.pk and len(large) == len(small)


def test_the_api_serves_both_sets(config: JudgeConfig, client_for) -> None:
    client = client_for("admin")
    single = client.get("/api/leaderboard/", {"judge": config.pk}).json()
    assert single["set"] == "single" and [row["system"] for row in single["rows"]] == ["A", "B", "C"]
    assert single["rows"][0]["cells"]["all_avg"]["value"] == pytest.approx(7.4)
    dialogues = client.get("/api/leaderboard/", {"judge": config.pk, "set": "dialogues"}).json()
    assert (dialogues["set"], dialogues["fall_threshold"]) == ("dialogues", 6.0)
    assert [turn["turn"] for turn in dialogues["turns"]] == [1, 2, 3]
    turn_two = {row["system"]: row for row in dialogues["turns"][1]["rows"]}
    assert turn_two["A"]["cells"]["all_avg"]["value"] == pytest.approx(7.0)
    assert turn_two["A"]["cells"]["reasoning_avg"]["n_excluded"] == 1
    # n/N: both systems answered turn 2 of both dialogues; B's audio was never judged
    assert (
        turn_two["A"]["cells"]["reasoning_avg"]["n_expected"],
        turn_two["A"]["cells"]["reasoning_avg"]["comparable"],
    ) == (2, True)
    assert (
        turn_two["B"]["cells"]["response_audio"]["n_valid"],
        turn_two["B"]["cells"]["response_audio"]["n_expected"],
    ) == (0, 2)
    assert turn_two["B"]["cells"]["all_avg"]["value"] is None  # audio not judged
    assert turn_two["B"]["cells"]["response_content"]["value"] == pytest.approx(3.5)
    by_system = {row["system"]: row for row in dialogues["dialogues"]}
    assert by_system["A"]["mean"] == pytest.approx((59 / 9 + 8.5) / 2)
    assert by_system["A"]["n_expected"] == 2
    assert {key: by_system["B"][key] for key in ("n_dialogues", "n_fell", "share_fell", "fell_at")} == {
        "n_dialogues": 0,
        "n_fell": 0,
        "share_fell": None,
        "fell_at": {},
    }
    assert client.get("/api/leaderboard/", {"judge": config.pk, "set": "everything"}).status_code == 400
    bad_threshold = client.get(
        "/api/leaderboard/", {"judge": config.pk, "set": "dialogues", "fall_threshold": "0"}
    )
    assert bad_threshold.status_code == 400 and bad_threshold.json()["problems"][0].startswith(
        "fall_threshold: "
    )
    stricter = client.get(
        "/api/leaderboard/", {"judge": config.pk, "set": "dialogues", "fall_threshold": "8.5"}
    )
    assert {row["system"]: row["fell_at"] for row in stricter.json()["dialogues"]} == {
        "A": {"1": 1, "3": 1},
        "B": {},
    }


def test_exports_of_the_dialogue_set_carry_the_turn(config: JudgeConfig, client_for) -> None:
    client = client_for("admin")
    response = client.get(reverse("evaluation:leaderboard_csv"), {"judge": config.pk, "set": "dialogues"})
    assert response["Content-Disposition"] == 'attachment; filename="leaderboard-echoeval-v1-dialogues.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(row["turn"], row["system"], row["all_avg"]) for row in rows] == [
        ("1", "A", "8.3333"),
        ("1", "B", ""),
        ("2", "A", "7.0000"),
        ("2", "B", ""),
        ("3", "A", "6.6667"),
        ("3", "B", ""),
    ]
    api_latex = client.get(
        "/api/leaderboard/latex/", {"judge": config.pk, "set": "dialogues"}
    ).content.decode()
    assert api_latex.count(r"\begin{tabular}") == 3 and "% Turn 2\n" in api_latex
    single_csv = client.get("/api/leaderboard/csv/", {"judge": config.pk}).content.decode()
    assert single_csv.startswith("system,") and len(single_csv.splitlines()) == 4


def test_error_propagation_is_per_set(config: JudgeConfig, client_for) -> None:
    single = {system.name: row for system, row in error_propagation_table("echoeval-v1", config)}
    # the single-turn set: A's 6 items, 2 with a judge error on a chain stage (i3 reasoning, i4 perception)
    assert (single["A"].n_items, single["A"].n_items_excluded) == (4, 2)
    dialogues = {
        system.name: row
        for system, row in error_propagation_table("echoeval-v1", config, item_set="dialogues")
    }
    # A's six turns: D2 turn 2 excluded (reasoning error); D1 turn 3 is the only one wrong in P and R,
    # its response right: P(R|P) = 4/4, P(Resp|R) = 4/4, cascade = (1 + 0) / (1 + 1)
    a = dialogues["A"]
    assert (a.n_items, a.n_items_excluded, a.p_reasoning_given_perception, a.cascade_error_ratio) == (
        5,
        1,
        1.0,
        0.5,
    )
    assert set(dialogues) == {"A", "B"}
    api = client_for("admin").get("/api/error-propagation/", {"judge": config.pk, "set": "dialogues"}).json()
    assert [row["n_items"] for row in api] == [5, 6]


def test_item_lists_are_per_set(config: JudgeConfig, client_for) -> None:
    client = client_for("admin")
    single = client.get(reverse("evaluation:item_list"), {"judge": config.pk}).content.decode()
    turns = client.get(
        reverse("evaluation:item_list"), {"judge": config.pk, "set": "dialogues"}
    ).content.decode()
    assert ">i1<" in single and "D1.t1" not in single
    assert ">D1.t1<" in turns and ">D2.t3<" in turns and ">i1<" not in turns
