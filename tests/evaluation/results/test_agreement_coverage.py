"""The judge-human correlation carries n of N: the outputs scored by both, of those scored by hand."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evaluation.judging.models import HumanJudgement, JudgeConfig
from evaluation.outputs.models import System
from evaluation.results.agreement import judge_human_agreement
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory


@pytest.fixture
def judge(db: None, users) -> JudgeConfig:
    # Six outputs scored by hand on perception; the judge scored five validly and erred on the sixth.
    config = JudgeConfigFactory.create(name="judge")
    system = System.objects.create(name="S", text_only=True)
    for number, (judged, hand) in enumerate([(2, 1), (4, 3), (6, 2), (8, 4), (10, 5), (None, 3)]):
        output = ModelOutputFactory.create(
            system=system, item=BenchmarkItemFactory.create(external_id=f"EE-{number}")
        )
        JudgementFactory.create(output=output, stage="perception", judge_config=config, score=judged)
        HumanJudgement.objects.create(
            output=output,
            stage="perception",
            evaluator=users["evaluator"],
            subscores={},
            raw_sum=hand,
            score=hand,
        )
    return config


def test_each_coefficient_stands_on_n_of_the_n_outputs_scored_by_hand(judge: JudgeConfig) -> None:
    table = judge_human_agreement(judge, n_boot=200)
    perception = table.dimensions[0]
    assert (perception.n, perception.n_expected, perception.coverage.text) == (5, 6, "5/6")
    # nothing scored by hand on reasoning: 0 of 0
    assert table.dimensions[1].coverage.text == "0/0"
    assert {row.label: row.coverage.text for row in table.by_stage}["Perception"] == "5/6"


def test_the_page_shows_n_of_n(judge: JudgeConfig, client_for) -> None:
    html = client_for("admin").get(reverse("evaluation:agreement"), {"judge": judge.pk}).content.decode()
    row = re.search(r'<tr data-dimension="Perception">(.*?)</tr>', html, re.S)
    assert row is not None
    assert (
        '<td class="num" data-testid="outputs" title="5 outputs scored by the judge and by hand, of the 6 scored'
        ' by hand">5/6</td>'
    ) in row.group(1)
