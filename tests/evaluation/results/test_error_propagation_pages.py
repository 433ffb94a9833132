"""Table 8 from stored judgements, on the hand-computed set of the pure module's tests."""

from __future__ import annotations

import random
import re

import pytest
from django.urls import reverse

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from evaluation.results.leaderboard import StageRecord
from evaluation.results.propagation import error_propagation
from evaluation.results.reports import error_propagation_table
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from webapp.lib.vocabulary import SCENARIOS

# Threshold 0.6 of each stage maximum: perception and reasoning >= 6/10, content >= 3/5.
#   item  P      R      Resp         P ok  R ok  Resp ok
#   1     8      7      4            y     y     y
#   2     9      5      2            y     n     n
#   3     7      6      2            y     y     n      (6/10 = 0.6 counts as correct)
#   4     4      3      2            n     n     n
#   5     5      8      2            n     y     n
#   6     6 (shift item) 6   3       y     y     y
#   7     error  8      4            excluded (judge error)
#   8     8      8      (not judged) excluded (incomplete)
# P(R|P) = 3/4, P(Resp|R) = 2/4, cascade = (1 + 2) / (2 + 2) = 0.75
NOT_JUDGED = -1
ROWS: list[tuple[int, str, float | None, float | None, float | None]] = [
    (1, "implicit", 8, 7, 4),
    (2, "implicit", 9, 5, 2),
    (3, "implicit", 7, 6, 2),
    (4, "implicit", 4, 3, 2),
    (5, "implicit", 5, 8, 2),
    (6, "emotion-shift", 6, 6, 3),
    (7, "implicit", None, 8, 4),
    (8, "implicit", 8, 8, NOT_JUDGED),
]


@pytest.fixture
def config(db: None) -> JudgeConfig:
    judge = JudgeConfigFactory.create(name="judge")
    system = System.objects.create(name="S")
    for number, scenario, perception, reasoning, content in ROWS:
        output = ModelOutputFactory.create(
            system=system,
            item=BenchmarkItemFactory.create(external_id=f"i{number}", scenario=scenario),
            response_audio_key="",
        )
        JudgementFactory.create(
            output=output,
            stage="shift_perception" if scenario == "emotion-shift" else "perception",
            judge_config=judge,
            score=perception,
        )
        JudgementFactory.create(output=output, stage="reasoning", judge_config=judge, score=reasoning)
        if content != NOT_JUDGED:
            JudgementFactory.create(
                output=output, stage="response_content", judge_config=judge, score=content
            )
        # Audio scores play no part in the cascade.
        JudgementFactory.create(output=output, stage="response_audio", judge_config=judge, score=1)
    return judge


def test_table_eight_by_hand(config: JudgeConfig) -> None:
    ((system, row),) = error_propagation_table("echoeval-v1", config, 0.6)
    assert system.name == "S"
    assert (row.n_items, row.n_items_excluded) == (6, 2)
    assert (row.p_reasoning_given_perception, row.p_response_given_reasoning, row.cascade_error_ratio) == (
        0.75,
        0.5,
        0.75,
    )


def test_the_threshold_is_a_setting_shown_beside_the_table(config: JudgeConfig, client_for) -> None:
    # at 0.8: P ok {1, 2}, neither has R ok -> 0/2; R ok {5}, whose content 2 < 4 -> 0/1;
    # P wrong {3, 4, 5, 6} with R wrong {3, 4, 6}; R wrong {1, 2, 3, 4, 6} with Resp wrong {2, 3, 4, 6}
    # -> cascade (3 + 4) / (4 + 5) = 0.78
    response = client_for("admin").get(
        reverse("evaluation:error_propagation"), {"judge": config.pk, "threshold": "0.8"}
    )
    html = response.content.decode()
    assert '<strong data-testid="threshold-value">0.8</strong>' in html
    assert "perception ≥ 8/10, reasoning ≥ 8/10, response content ≥ 4/5" in html
    match = re.search(r'<tr data-system="S">(.*?)</tr>', html, re.S)
    assert match is not None
    row = match.group(1)
    cells = re.findall(r'<td class="num"[^>]*>([^<]*)</td>', row)
    assert cells == ["0.00", "0.00", "0.78", "6/8", "2"]  # 6 items complete of the 8 expected


def test_sql_pivot_matches_the_pure_module_on_random_scores(db: None) -> None:
    rng = random.Random(3)
    judge = JudgeConfigFactory.create(name="j")
    records = []
    items = [BenchmarkItemFactory.create(external_id=f"r{n}", scenario=SCENARIOS[n % 5]) for n in range(20)]
    for name in ("S1", "S2"):
        system = System.objects.create(name=name)
        for item in items:
            output = ModelOutputFactory.create(system=system, item=item, response_audio_key="")
            perception = "shift_perception" if item.scenario == "emotion-shift" else "perception"
            for stage, top in ((perception, 10), ("reasoning", 10), ("response_content", 5)):
                if rng.random() < 0.1:
                    continue
                score = None if rng.random() < 0.1 else float(rng.randint(0 if top == 10 else 1, top))
                JudgementFactory.create(output=output, stage=stage, judge_config=judge, score=score)
                records.append(StageRecord(name, item.external_id, item.scenario, stage, score))
    for threshold in (0.5, 0.6, 0.8):
        expected = error_propagation(records, threshold)
        assert {
            system.name: row for system, row in error_propagation_table("echoeval-v1", judge, threshold)
        } == expected
