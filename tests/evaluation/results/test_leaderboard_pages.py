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
from evaluation.outputs.models import System
from evaluation.results.leaderboard import StageRecord, build_leaderboard
from evaluation.results.reports import leaderboard
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.evaluation.results.hand_computed import (
    EXPECTED_A,
    ITEM_SCENARIOS,
    SCORES,
    cell_values,
    judged_stage,
)
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from webapp.lib.vocabulary import SCENARIOS


def store(scores: dict, config: JudgeConfig, categories: dict[str, str] | None = None) -> None:
    items = {
        item_id: BenchmarkItemFactory.create(external_id=item_id, scenario=scenario)
        for item_id, scenario in ITEM_SCENARIOS.items()
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
                JudgementFactory.create(
                    output=outputs[item_id],
                    stage=judged_stage(stage, item_id),
                    judge_config=config,
                    score=score,
                )


@pytest.fixture
def config(db: None) -> JudgeConfig:
    judge = JudgeConfigFactory.create(name="gpt-judge")
    store(SCORES, judge)
    return judge


def test_table_two_figures_from_the_database(config: JudgeConfig) -> None:
    a, b, c = leaderboard("echoeval-v1", config).table.rows
    assert cell_values(a) == pytest.approx(EXPECTED_A)
    assert cell_values(b)["perception_avg"] == pytest.approx(32 / 6)
    # audio not judged: content (3.4 out of 5) is not shown as Response or averaged into All
    assert cell_values(b)["response_content"] == pytest.approx(3.4)
    assert (cell_values(b)["response_avg"], cell_values(b)["all_avg"]) == (None, None)
    assert (cell_values(c)["perception_avg"], cell_values(c)["all_avg"]) == (7.0, None)
    assert (a.cells["perception_modality_conflict"].n_excluded, a.cells["reasoning_avg"].n_excluded) == (1, 1)
    assert [row.cells["all_avg"].mark for row in (a, b, c)] == ["best", None, None]


def _row(html: str, system: str) -> str:
    match = re.search(rf'<tr data-system="{system}">(.*?)</tr>', html, re.S)
    assert match is not None, f"no row for {system}"
    return match.group(1)


def test_the_page_shows_marks_excluded_counts_and_the_chart(config: JudgeConfig, client_for) -> None:
    response = client_for("admin").get(reverse("evaluation:leaderboard"), {"judge": config.pk})
    html = response.content.decode()
    assert response.status_code == 200
    row_a = _row(html, "A")
    assert (
        'data-mark="best" title="22 valid of 24 expected, 2 excluded">7.40<span class="excluded"> (2 excl.)'
        '</span><span class="coverage" data-testid="coverage">22/24</span></td>' in row_a
    )
    # an empty cell with an excluded judgement reads "- (1 excl.)", never "-−1"
    assert (
        '<td class="num" title="0 valid of 1 expected, 1 excluded">-<span class="excluded"> (1 excl.)</span>'
        '<span class="coverage" data-testid="coverage">0/1</span></td>' in row_a
    )
    assert "-−" not in html and '-<span class="excluded">−' not in html
    assert '<td class="num" data-testid="excluded">2</td>' in row_a
    row_b = _row(html, "B")
    # B's Response Avg. and All are empty (audio not judged), with their counts kept
    assert (
        '<td class="num" data-comparable="false" title="17 valid of 24 expected, 1 excluded, not comparable">'
        '-<span class="excluded"> (1 excl.)</span><span class="coverage" data-testid="coverage">17/24</span></td>'
        in row_b
    )
    assert 'data-testid="content-only-note"' in html
    # Implicit: A and C tie for best at 7.00, and say so
    assert (
        'data-mark="best" data-tied="true" title="2 valid of 2 expected, 0 excluded, tied">7.00<span class="tie">=</span>'
        in row_a
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
        ("B", "", "0"),
        ("C", "", "0"),
    ]
    latex = client.get(reverse("evaluation:leaderboard_tex"), {"judge": config.pk}).content.decode()
    assert r"\textbf{7.40} \\" in latex and "4.58" not in latex
    row_b = next(line for line in latex.splitlines() if line.startswith("B &"))
    assert row_b.endswith(
        r"& \underline{3.40} & - & - & - \\"
    )  # Content on its own scale; Audio, Response, All empty


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
