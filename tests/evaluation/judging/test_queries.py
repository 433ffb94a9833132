"""The judging queries that mean one thing: a run's judgements, its errors, active runs, the next output."""

from __future__ import annotations

import pytest

from evaluation.judging.models import HumanJudgement, Judgement, JudgeRun, RubricSample, RubricSampleEntry
from evaluation.judging.runs import start_judge_run
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory, SystemFactory
from webapp.models import JobStatus, User

pytestmark = pytest.mark.django_db


def test_a_runs_judgements_are_its_judges_on_its_systems_outputs_of_its_version(
    users: dict[str, User],
) -> None:
    system, judge = SystemFactory.create(text_only=True), JudgeConfigFactory.create()
    output = ModelOutputFactory.create(system=system)
    theirs = [
        JudgementFactory.create(output=output, judge_config=judge, score=7.0),
        JudgementFactory.create(output=output, judge_config=judge, stage="reasoning", score=None),
    ]
    JudgementFactory.create(
        output=output, judge_config=JudgeConfigFactory.create(), score=3.0
    )  # another judge
    JudgementFactory.create(
        output=ModelOutputFactory.create(benchmark_version="v9"), judge_config=judge, score=3.0
    )
    run = start_judge_run(system, "echoeval-v1", judge, started_by=users["admin"])

    assert set(Judgement.objects.for_run(run)) == set(theirs)
    assert list(Judgement.objects.for_run(run).errors()) == [theirs[1]]
    assert Judgement.objects.for_run(run).error_counts() == {"valid": 1, "invalid_json": 1, "rubric": 0}


def test_a_run_is_active_until_its_job_finishes(users: dict[str, User]) -> None:
    system, judge = SystemFactory.create(text_only=True), JudgeConfigFactory.create()
    run = start_judge_run(system, "echoeval-v1", judge, started_by=users["admin"])

    assert list(JudgeRun.objects.active_for(system, "echoeval-v1", judge)) == [run]
    assert not JudgeRun.objects.active_for(system, "other-version", judge).exists()

    assert run.job is not None
    run.job.status = JobStatus.SUCCEEDED
    run.job.save(update_fields=["status"])
    assert not JudgeRun.objects.active_for(system, "echoeval-v1", judge).exists()


def test_an_evaluators_next_output_is_the_first_they_have_not_scored(users: dict[str, User]) -> None:
    evaluator = users["evaluator"]
    sample = RubricSample.objects.create(name="s", benchmark_version="echoeval-v1")
    outputs = [ModelOutputFactory.create(system=SystemFactory.create(text_only=True)) for _ in range(3)]
    entries = [
        RubricSampleEntry.objects.create(sample=sample, output=output, position=position)
        for position, output in enumerate(outputs)
    ]
    HumanJudgement.objects.create(
        output=outputs[0], stage="perception", evaluator=evaluator, raw_sum=5, score=5
    )
    HumanJudgement.objects.create(  # someone else's score does not count as theirs
        output=outputs[1], stage="perception", evaluator=users["admin"], raw_sum=5, score=5
    )

    assert sample.next_entry_for(evaluator) == entries[1]
    assert sample.n_scored_by(evaluator) == 1
    assert sample.next_entry_for(users["admin"]) == entries[0]


def test_an_evaluators_saved_scores_of_an_output_are_theirs_by_stage(users: dict[str, User]) -> None:
    evaluator, other = users["evaluator"], users["admin"]
    output, elsewhere = (
        ModelOutputFactory.create(system=SystemFactory.create(text_only=True)) for _ in range(2)
    )
    mine = {
        stage: HumanJudgement.objects.create(
            output=output, stage=stage, evaluator=evaluator, raw_sum=5, score=5
        )
        for stage in ("perception", "reasoning")
    }
    HumanJudgement.objects.create(output=output, stage="perception", evaluator=other, raw_sum=1, score=1)
    HumanJudgement.objects.create(
        output=elsewhere, stage="response_content", evaluator=evaluator, raw_sum=2, score=2
    )

    assert HumanJudgement.objects.by_stage_of(output, evaluator) == mine
    assert HumanJudgement.objects.by_stage_of(elsewhere, other) == {}
