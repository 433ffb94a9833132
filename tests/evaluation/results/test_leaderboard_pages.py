"""The leaderboard page and exports from stored judgements, on a small set computed by hand."""

from __future__ import annotations

import csv
import io
import random
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from evaluation.judging.rubrics import SCENARIOS
from evaluation.outputs.models import System
from evaluation.results.leaderboard import StageRecord, build_leaderboard
from evaluation.results.reports import leaderboard
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory

SCENARIO_OF = {
    "i1": "implicit",
    "i2": "implicit",
    "i3": "audio-dominant",
    "i4": "modality-conflict",
    "i5": "high-arousal",
    "i6": "emotion-shift",
}

# The hand-computed set of tests/evaluation/test_leaderboard.py, stored as judgements:
# System A (speech out): perception i1 8, i2 6, i3 7, i4 judge error, i5 9, shift i6 5
#   -> Implicit 7.0, Neutral 7.0, Conflict "-" (1 excluded), Intense 9.0, Shift 5.0, Avg. 35/5 = 7.0
#   reasoning 6, 8, error, 7, 7, 8 -> 7.2; content all 4 but i3 3, i4 5 -> 24/6 = 4.0
#   audio 4, 5, 4, 4, 3, 4 -> 4.0; response 8.0; All (7.0 + 7.2 + 8.0) / 3 = 7.4; 2 excluded
# System B (text only): perception 5, 7, 4, 6, 8, shift 2 -> Implicit 6.0, Avg. 32/6 = 5.33
#   reasoning 4, 6, 5, 5, 5, 5 -> 5.0; content 3, 3, 4, 4, 3, error -> 3.4; response 3.4
#   All (5.3333 + 5.0 + 3.4) / 3 = 4.5778; 1 excluded
# System C: implicit perception 7, 7 only -> Implicit 7.0, Avg. 7.0, All "-"
SCORES = {
    "A": {
        "perception": {"i1": 8, "i2": 6, "i3": 7, "i4": None, "i5": 9, "i6": 5},
        "reasoning": {"i1": 6, "i2": 8, "i3": None, "i4": 7, "i5": 7, "i6": 8},
        "response_content": {"i1": 4, "i2": 4, "i3": 3, "i4": 5, "i5": 4, "i6": 4},
        "response_audio": {"i1": 4, "i2": 5, "i3": 4, "i4": 4, "i5": 3, "i6": 4},
    },
    "B": {
        "perception": {"i1": 5, "i2": 7, "i3": 4, "i4": 6, "i5": 8, "i6": 2},
        "reasoning": {"i1": 4, "i2": 6, "i3": 5, "i4": 5, "i5": 5, "i6": 5},
        "response_content": {"i1": 3, "i2": 3, "i3": 4, "i4": 4, "i5": 3, "i6": None},
    },
    "C": {"perception": {"i1": 7, "i2": 7}},
}


def store(scores: dict, config: JudgeConfig, categories: dict[str, str] | None = None) -> None:
    items = {
        item_id: BenchmarkItemFactory.create(external_id=item_id, scenario=scenario)
        for item_id, scenario in SCENARIO_OF.items()
    }
    for name, stages in scores.items():
        system = System.objects.create(
            name=name,
            text_only="response_audio" not in stages,
            category=(categories or {}).get(name, "general"),
        )
        outputs = {}
        for stage, by_item in stages.items():
            for item_id, score in by_item.items():
                if item_id not in outputs:
                    outputs[item_id] = ModelOutputFactory.create(
                        system=system, item=items[item_id], response_audio_key=""
                    )
                real_stage = "shift_perception" if stage == "perception" and item_id == "i6" else stage
                JudgementFactory.create(
                    output=outputs[item_id], stage=real_stage, judge_config=config, score=score
                )


@pytest.fixture
def config(db: None) -> JudgeConfig:
    judge = JudgeConfigFactory.create(name="gpt-judge")
    store(SCORES, judge)
    return judge


def _values(row):
    return {key: cell.value for key, cell in row.cells.items()}


def test_table_two_figures_from_the_database(config: JudgeConfig) -> None:
    a, b, c = leaderboard("echoeval-v1", config).table.rows
    assert _values(a) == pytest.approx(
        {
            "perception_implicit": 7.0,
            "perception_audio_dominant": 7.0,
            "perception_modality_conflict": None,
            "perception_high_arousal": 9.0,
            "perception_emotion_shift": 5.0,
            "perception_avg": 7.0,
            "reasoning_avg": 7.2,
            "response_content": 4.0,
            "response_audio": 4.0,
            "response_avg": 8.0,
            "all_avg": 7.4,
        }
    )
    assert _values(b)["perception_avg"] == pytest.approx(32 / 6)
    assert _values(b)["response_avg"] == pytest.approx(3.4)
    assert _values(b)["all_avg"] == pytest.approx((32 / 6 + 5.0 + 3.4) / 3)
    assert (_values(c)["perception_avg"], _values(c)["all_avg"]) == (7.0, None)
    assert (a.cells["perception_modality_conflict"].n_excluded, a.cells["reasoning_avg"].n_excluded) == (1, 1)
    assert [row.cells["all_avg"].mark for row in (a, b, c)] == ["best", "second", None]


def _row(html: str, system: str) -> str:
    match = re.search(rf'<tr data-system="{system}">(.*?)</tr>', html, re.S)
    assert match is not None, f"no row for {system}"
    return match.group(1)


def test_the_page_shows_marks_excluded_counts_and_the_chart(config: JudgeConfig, client_for) -> None:
    response = client_for("admin").get(reverse("evaluation:leaderboard"), {"judge": config.pk})
    html = response.content.decode()
    assert response.status_code == 200
    row_a = _row(html, "A")
    assert 'data-mark="best" title="22 valid, 2 excluded">7.40<span class="excluded">−2</span></td>' in row_a
    assert '<td class="num" title="0 valid, 1 excluded">-<span class="excluded">−1</span></td>' in row_a
    assert '<td class="num" data-testid="excluded">2</td>' in row_a
    row_b = _row(html, "B")
    assert (
        'data-mark="second" title="17 valid, 1 excluded">4.58<span class="excluded">−1</span></td>' in row_b
    )
    assert 'id="leaderboard-chart"' in html and "chart-4.6.1.umd.min.js" in html


def test_the_page_runs_a_fixed_number_of_queries(config: JudgeConfig, client_for) -> None:
    client = client_for("admin")
    url = reverse("evaluation:leaderboard")
    with CaptureQueriesContext(connection) as small:
        client.get(url, {"judge": config.pk})
    more = System.objects.create(name="D")
    for output in System.objects.get(name="A").outputs.all():
        copy = ModelOutputFactory.create(system=more, item=output.item, response_audio_key="")
        for judgement in output.judgements.all():
            JudgementFactory.create(
                output=copy, stage=judgement.stage, judge_config=config, score=judgement.score
            )
    with CaptureQueriesContext(connection) as large:
        client.get(url, {"judge": config.pk})
    assert len(large) == len(small)


def test_csv_and_latex_exports(config: JudgeConfig, client_for) -> None:
    client = client_for("admin")
    response = client.get(reverse("evaluation:leaderboard_csv"), {"judge": config.pk})
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="leaderboard-echoeval-v1.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(row["system"], row["all_avg"], row["perception_avg_n_excluded"]) for row in rows] == [
        ("A", "7.4000", "1"),
        ("B", "4.5778", "0"),
        ("C", "", "0"),
    ]
    latex = client.get(reverse("evaluation:leaderboard_tex"), {"judge": config.pk}).content.decode()
    assert r"\textbf{7.40} \\" in latex and r"\underline{4.58} \\" in latex


def test_rows_follow_the_papers_grouping_by_category(db: None) -> None:
    judge = JudgeConfigFactory.create(name="j")
    store(SCORES, judge, categories={"A": "ours", "B": "omni", "C": "general"})
    assert [system.name for system in leaderboard("echoeval-v1", judge).systems] == ["C", "B", "A"]


def test_sql_aggregation_matches_the_pure_module_on_random_scores(db: None) -> None:
    rng = random.Random(7)
    judge = JudgeConfigFactory.create(name="j")
    items = [BenchmarkItemFactory.create(external_id=f"r{n}", scenario=SCENARIOS[n % 5]) for n in range(15)]
    records = []
    for name in ("S1", "S2", "S3"):
        system = System.objects.create(name=name)
        for item in items:
            output = ModelOutputFactory.create(system=system, item=item, response_audio_key="")
            perception = "shift_perception" if item.scenario == "emotion-shift" else "perception"
            for stage, top in (
                (perception, 10),
                ("reasoning", 10),
                ("response_content", 5),
                ("response_audio", 5),
            ):
                if rng.random() < 0.1:
                    continue  # not judged
                score = None if rng.random() < 0.1 else float(rng.randint(1, top))
                JudgementFactory.create(output=output, stage=stage, judge_config=judge, score=score)
                records.append(StageRecord(name, item.external_id, item.scenario, stage, score))
    assert leaderboard("echoeval-v1", judge).table == build_leaderboard(records, systems=["S1", "S2", "S3"])
