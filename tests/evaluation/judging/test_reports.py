"""The rubric-sample pages' figures: right, and in a fixed number of queries however large the samples."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.judging.models import HumanJudgement, JudgeConfig, RubricSample, RubricSampleEntry
from evaluation.judging.reports import (
    evaluator_samples,
    judge_config_rows,
    rubric_sample_progress,
    rubric_sample_rows,
)
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory, SystemFactory
from webapp.archive import archive_rows
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _sample(evaluators: list[User], n_outputs: int, n_scored: int) -> RubricSample:
    """A sample of n outputs; each evaluator has scored the first n_scored (two stages each)."""
    sample = RubricSample.objects.create(
        name=f"sample {RubricSample.objects.count()}", benchmark_version="v1"
    )
    sample.evaluators.set(evaluators)
    system = SystemFactory.create(text_only=True)
    for position in range(n_outputs):
        output = ModelOutputFactory.create(system=system)
        RubricSampleEntry.objects.create(sample=sample, output=output, position=position)
        if position < n_scored:
            for evaluator in evaluators:
                for stage in ("perception", "reasoning"):
                    HumanJudgement.objects.create(
                        output=output, stage=stage, evaluator=evaluator, raw_sum=5, score=5
                    )
    return sample


def _count(report: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as queries:
        report()
    return len(queries)


def test_the_sample_list_counts_outputs_and_evaluators(make_user: Callable[..., User]) -> None:
    evaluators = [make_user(Role.EVALUATOR) for _ in range(3)]
    _sample(evaluators[:1], n_outputs=1, n_scored=0)
    few = _count(lambda: list(rubric_sample_rows()))
    _sample(evaluators, n_outputs=4, n_scored=2)

    assert _count(lambda: list(rubric_sample_rows())) == few
    shown = [(sample.n_entries, sample.n_evaluators) for sample in rubric_sample_rows()]  # type: ignore[attr-defined]
    assert sorted(shown) == [(1, 1), (4, 3)]


def test_a_samples_progress_counts_each_evaluators_scored_outputs(make_user: Callable[..., User]) -> None:
    small = _sample([make_user(Role.EVALUATOR, "ann")], n_outputs=1, n_scored=1)
    few = _count(lambda: rubric_sample_progress(small))
    evaluators = [make_user(Role.EVALUATOR, name) for name in ("bob", "cy", "dee")]
    large = _sample(evaluators, n_outputs=5, n_scored=3)
    archive_rows(HumanJudgement.objects.filter(evaluator=evaluators[2]), actor=None, reason="rater withdrew")

    assert _count(lambda: rubric_sample_progress(large)) == few
    assert [(evaluator.username, done) for evaluator, done in rubric_sample_progress(large)] == [
        ("bob", 3),
        ("cy", 3),
        ("dee", 0),
    ]


def test_an_evaluators_samples_carry_their_own_progress(make_user: Callable[..., User]) -> None:
    evaluator, other = make_user(Role.EVALUATOR), make_user(Role.EVALUATOR)
    _sample([evaluator], n_outputs=2, n_scored=1)
    few = _count(lambda: evaluator_samples(evaluator))
    _sample([evaluator, other], n_outputs=4, n_scored=4)
    _sample([evaluator], n_outputs=3, n_scored=0)
    _sample([other], n_outputs=3, n_scored=3)

    assert _count(lambda: evaluator_samples(evaluator)) == few
    shown = [(sample.n_entries, done) for sample, done in evaluator_samples(evaluator)]  # type: ignore[attr-defined]
    assert sorted(shown) == [
        (2, 1),
        (3, 0),
        (4, 4),
    ]


def _judge(name: str, n_valid: int, n_errors: int) -> JudgeConfig:
    """A judge with n_valid scored and n_errors failed judgements, each of its own text-only output."""
    judge = JudgeConfigFactory.create(name=name)
    system = SystemFactory.create(text_only=True)
    for score in [7.0] * n_valid + [None] * n_errors:
        JudgementFactory.create(
            output=ModelOutputFactory.create(system=system), judge_config=judge, score=score
        )
    return judge


def _judges_page() -> list[tuple[str, str, str, int, int]]:
    """What the judges page shows per configuration: name, endpoint, model and the two counts."""
    return [
        (config.name, config.effective_base_url, config.effective_model, config.n_judgements, config.n_errors)  # type: ignore[attr-defined]
        for config in judge_config_rows()
    ]


def test_the_judges_page_counts_judgements_and_errors_by_name() -> None:
    _judge("zeta", n_valid=1, n_errors=0)
    few = _count(_judges_page)
    _judge("alpha", n_valid=3, n_errors=2)
    _judge("mid", n_valid=0, n_errors=0)

    assert _count(_judges_page) == few
    assert [(name, n, errors) for name, _, _, n, errors in _judges_page()] == [
        ("alpha", 5, 2),
        ("mid", 0, 0),
        ("zeta", 1, 0),
    ]
