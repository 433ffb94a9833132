"""The offline heuristic judge: rubric-shaped answers from word overlap, judge runs without any endpoint."""

from __future__ import annotations

import pytest

from evaluation.judging.forms import JudgeConfigForm
from evaluation.judging.heuristic import OFFLINE_HEURISTIC_MODEL, heuristic_answer, reference_coverage
from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.prompts import parse_judgement
from evaluation.judging.rubrics import PERCEPTION, REASONING, RESPONSE_CONTENT, SUBSCORE_RANGES
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from tests.evaluation.judging_support import GOLD_PERCEPTION, GOLD_TOM, BenchmarkItemFactory
from tests.factories import ModelOutputFactory
from webapp.jobs import run_job
from webapp.models import JobStatus


def test_an_output_that_uses_the_references_words_scores_higher_than_one_that_does_not() -> None:
    close = "Sad, lonely voice, medium intensity; low pitch, slow and falling: eats alone again."
    far = "Here are five tips to feel better: sleep, exercise."

    good = parse_judgement(PERCEPTION, heuristic_answer(PERCEPTION, close, GOLD_PERCEPTION), "implicit")
    poor = parse_judgement(PERCEPTION, heuristic_answer(PERCEPTION, far, GOLD_PERCEPTION), "implicit")

    assert good.final > poor.final
    assert reference_coverage(far, GOLD_PERCEPTION) == 0.0


@pytest.mark.parametrize("stage", [PERCEPTION, REASONING, RESPONSE_CONTENT])
def test_every_answer_keeps_to_the_rubric_and_says_it_is_a_heuristic(stage: str) -> None:
    for shown in ("", "emotional validation questioning connection", {"context": "lonely evening"}):
        answer = heuristic_answer(stage, shown, {**GOLD_PERCEPTION, **GOLD_TOM})
        assert set(answer["subscores"]) == set(SUBSCORE_RANGES[stage])
        parse_judgement(stage, answer, "implicit")  # raises on any rubric break
        assert answer["rationale"].startswith("Offline heuristic, not a judge")


def test_the_user_repeating_their_own_words_earns_nothing() -> None:
    gold = {"user_utterance": "I ate dinner alone again", "situation": "dinner alone again"}

    assert reference_coverage("I ate dinner alone again", gold) == 0.0


@pytest.mark.usefixtures("media_root")
def test_a_judge_run_with_the_offline_heuristic_needs_no_endpoint_and_fills_the_scores(db: None) -> None:
    system = System.objects.create(name="Omni-X", text_only=False)
    for index in range(2):
        ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id=f"E-{index}"))
    judge = JudgeConfig.objects.create(name="Offline", offline_heuristic=True)

    run = start_judge_run(system, "echoeval-v1", judge, started_by=None)
    assert run.job is not None
    run_job(run.job.pk)
    run.job.refresh_from_db()

    assert run.job.status == JobStatus.SUCCEEDED, run.job.error
    judgements = Judgement.objects.filter(run=run)
    # Perception, reasoning and content for each output; it does not listen, so no audio stage.
    assert judgements.count() == 6
    assert not judgements.filter(stage="response_audio").exists()
    assert all(judgement.score is not None for judgement in judgements)
    assert set(judgements.values_list("judge_model", flat=True)) == {OFFLINE_HEURISTIC_MODEL}
    assert "no endpoint" in run.job.log


def test_the_offline_heuristic_cannot_be_set_to_listen(db: None) -> None:
    form = JudgeConfigForm(
        data={
            "name": "Offline",
            "offline_heuristic": "on",
            "attach_audio": "on",
            "max_retries": 3,
            "temperature": 0,
        }
    )

    assert not form.is_valid()
    assert "cannot listen" in str(form.errors["attach_audio"])
