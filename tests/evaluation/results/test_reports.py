"""Table 8 (error propagation) from stored judgements in a fixed number of queries, however many systems."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from evaluation.results.reports import error_propagation_table
from tests.factories import ItemFactory, JudgeConfigFactory, JudgementFactory, ModelOutputFactory

pytestmark = pytest.mark.django_db


def _judged_system(judge: JudgeConfig, name: str, n_outputs: int) -> System:
    """A system whose outputs are judged correct on every stage of the chain."""
    system = System.objects.create(name=name, text_only=True)
    for _ in range(n_outputs):
        output = ModelOutputFactory.create(system=system, item=ItemFactory.create())
        for stage, score in (("perception", 9.0), ("reasoning", 9.0), ("response_content", 5.0)):
            JudgementFactory.create(output=output, stage=stage, judge_config=judge, score=score)
    return system


def _queries_of_table(judge: JudgeConfig) -> int:
    with CaptureQueriesContext(connection) as queries:
        error_propagation_table("echoeval-v1", judge)
    return len(queries)


def test_table_eight_takes_a_fixed_number_of_queries_however_many_systems_and_outputs() -> None:
    judge = JudgeConfigFactory.create()
    _judged_system(judge, "A", n_outputs=1)
    few = _queries_of_table(judge)
    for name in ("B", "C", "D"):
        _judged_system(judge, name, n_outputs=4)

    assert _queries_of_table(judge) == few
    assert [(system.name, row.n_items) for system, row in error_propagation_table("echoeval-v1", judge)] == [
        ("A", 1),
        ("B", 4),
        ("C", 4),
        ("D", 4),
    ]
