"""A judge run against a real local chat-completions server: answers stored, errors kept, caps applied."""

from __future__ import annotations

import pytest

from evaluation.judging.models import JudgeCacheEntry, JudgeConfig, Judgement
from evaluation.judging.runs import JudgeRunRefused, start_judge_run
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory, good_answer, rubric_judge, stage_of
from tests.factories import ModelOutputFactory
from tests.support.fake_chat_server import (
    RecordedRequest,
    Reply,
    chat_reply,
    json_reply,
    running_chat_server,
    status_reply,
)
from webapp.jobs import run_job
from webapp.models import Job, JobStatus, User

pytestmark = pytest.mark.usefixtures("media_root")


@pytest.fixture
def system(db: None) -> System:
    return System.objects.create(name="Omni-X")


def _config(base_url: str, **fields: object) -> JudgeConfig:
    fields.setdefault("attach_audio", True)
    return JudgeConfig.objects.create(
        name=f"judge-{JudgeConfig.objects.count()}", base_url=base_url, model="judge-model", **fields
    )


def _run_job(system: System, config: JudgeConfig, **options: bool) -> Job:
    """Start a run and execute its job in this process, as a worker would; return the finished job."""
    run = start_judge_run(system, "echoeval-v1", config, started_by=None, **options)
    assert run.job is not None
    run_job(run.job.pk)
    run.job.refresh_from_db()
    return run.job


def _run(system: System, config: JudgeConfig, status: str = JobStatus.SUCCEEDED, **options: bool) -> dict:
    job = _run_job(system, config, **options)
    assert job.status == status, job.error
    assert job.result is not None
    return job.result


def _scores(system: System) -> dict[tuple[str, str], float | None]:
    return {
        (judgement.output.item.external_id, judgement.stage): judgement.score
        for judgement in Judgement.objects.filter(output__system=system).select_related("output__item")
    }


def test_good_answers_are_scored_with_caps_and_automatic_flags(system: System) -> None:
    # given: a normal output, an emotion-shift item, and an output with no perception and no audio
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    ModelOutputFactory.create(
        system=system, item=BenchmarkItemFactory.create(external_id="EE-2", scenario="emotion-shift")
    )
    ModelOutputFactory.create(
        system=system,
        item=BenchmarkItemFactory.create(external_id="EE-3"),
        perception_text="",
        response_audio_key="",
    )
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-4", gold=None))
    config = _config("http://placeholder")
    with running_chat_server(rubric_judge()) as server:
        config.base_url = server.base_url
        config.save()
        # when
        result = _run(system, config)
    # then: shift perception replaces perception on EE-2; EE-4 has no gold and is not judged
    assert result == {
        "to_judge": 12,
        "valid": 12,
        "judge_errors": 0,
        "unreachable": 0,
        "already_judged": 0,
        "no_gold": 1,
        "cached": 0,
        "rejudged_errors": 0,
        "left_errors": 0,
        "rows": {
            "total": 12,
            "failed": 0,
            "noun": "stages",
            "status": "succeeded",
            "share": 0.0,
            "percent": "0%",
        },
    }
    assert len(server.chat_requests) == 12
    assert _scores(system) == {
        ("EE-1", "perception"): 8,
        ("EE-1", "reasoning"): 8,
        ("EE-1", "response_content"): 4,
        ("EE-1", "response_audio"): 5,
        ("EE-2", "shift_perception"): 7,
        ("EE-2", "reasoning"): 8,
        ("EE-2", "response_content"): 4,
        ("EE-2", "response_audio"): 5,
        # empty perception: capped at 1; no audio: unintelligible, capped at 1 (the judge said 8 and 5)
        ("EE-3", "perception"): 1,
        ("EE-3", "reasoning"): 8,
        ("EE-3", "response_content"): 4,
        ("EE-3", "response_audio"): 1,
    }
    capped = Judgement.objects.get(output__item__external_id="EE-3", stage="perception")
    assert (capped.raw_sum, capped.cap, capped.auto_flags, capped.judge_flags) == (
        8,
        1,
        ["empty_or_off_topic"],
        [],
    )
    assert capped.rationale == "fine perception" and capped.prompt_version == "perception-v1"


def test_reasoning_strategy_overlap_is_flagged_by_the_app(system: System) -> None:
    # gold recommends validation and questioning and rules out information
    ModelOutputFactory.create(
        system=system,
        item=BenchmarkItemFactory.create(external_id="EE-1"),
        reasoning_fields={
            "context": "a",
            "latent_need": "b",
            "core_demand": "c",
            "strategy": ["psychoeducation"],
        },
    )
    with running_chat_server(rubric_judge()) as server:
        _run(system, _config(server.base_url))
    reasoning = Judgement.objects.get(stage="reasoning")
    # judge's 8, capped at 6 (a not-recommended strategy) and 8 (no recommended one): the lowest wins
    assert reasoning.auto_flags == ["no_recommended_overlap", "recommends_not_recommended"]
    assert (reasoning.cap, reasoning.score) == (6, 6)


def _by_stage(replies: dict[str, list[Reply]]):
    def answer(request: RecordedRequest) -> Reply:
        stage = stage_of(request)
        queue = replies.get(stage)
        return queue.pop(0) if queue else json_reply(good_answer(stage))

    return answer


def test_garbage_and_rubric_breaking_answers_are_stored_as_errors(system: System) -> None:
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    out_of_range = {"subscores": {"content": 9}, "flags": [], "rationale": "too generous"}
    handler = _by_stage(
        {
            "perception": [chat_reply("I think it is quite good!")],
            "response_content": [json_reply(out_of_range)],
        }
    )
    with running_chat_server(handler) as server:
        result = _run(system, _config(server.base_url), JobStatus.FINISHED_WITH_ERRORS)
    assert (result["valid"], result["judge_errors"]) == (2, 2)
    perception = Judgement.objects.get(stage="perception")
    assert (perception.error_kind, perception.score, perception.raw_text) == (
        "invalid_json",
        None,
        "I think it is quite good!",
    )
    content = Judgement.objects.get(stage="response_content")
    assert (content.error_kind, content.error, content.score) == (
        "rubric",
        "response_content sub-score 'content'=9 outside 1-5",
        None,
    )
    # a rubric-breaking answer is not kept in the cache: judging it again asks the judge again
    assert not JudgeCacheEntry.objects.filter(key=content.prompt_key).exists()
    assert JudgeCacheEntry.objects.count() == 2


def test_rate_limits_are_retried_and_then_succeed(system: System) -> None:
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    handler = _by_stage({"reasoning": [status_reply(429, retry_after=0), status_reply(503, retry_after=0)]})
    with running_chat_server(handler) as server:
        result = _run(system, _config(server.base_url))
    assert (result["valid"], result["judge_errors"], result["unreachable"]) == (4, 0, 0)
    assert Judgement.objects.get(stage="reasoning").attempts == 3
    assert len(server.chat_requests) == 6


def test_a_timeout_is_not_a_judgement_and_the_next_run_judges_it(system: System) -> None:
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    slow = _by_stage({"response_audio": [json_reply(good_answer("response_audio"), delay_s=2.0)]})
    with running_chat_server(slow) as server:
        config = _config(server.base_url, timeout_s=0.3, max_retries=0, max_concurrency=1)
        first = _run(system, config, JobStatus.FINISHED_WITH_ERRORS)  # a prompt without answer failed
        assert (first["valid"], first["unreachable"]) == (3, 1)
        assert not Judgement.objects.filter(stage="response_audio").exists()
        second = _run(system, config)
    assert (second["to_judge"], second["valid"]) == (1, 1)
    assert Judgement.objects.filter(output__system=system).count() == 4


def test_a_second_run_judges_nothing_twice_and_the_cache_spares_a_second_judge(system: System) -> None:
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    with running_chat_server(rubric_judge()) as server:
        config = _config(server.base_url)
        _run(system, config)
        again = _run(system, config)
        # another configuration of the same judge model asks the same prompts: all from the cache
        twin = _run(system, _config(server.base_url))
    assert again["to_judge"] == 0
    assert (twin["valid"], twin["cached"]) == (4, 4)
    assert len(server.chat_requests) == 4


def test_retrying_errors_judges_them_again(system: System) -> None:
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    handler = _by_stage({"perception": [chat_reply("nonsense")]})
    with running_chat_server(handler) as server:
        config = _config(server.base_url)
        _run(system, config, JobStatus.FINISHED_WITH_ERRORS)
        assert Judgement.objects.get(stage="perception").error_kind == "invalid_json"
        result = _run(system, config, retry_errors=True)
    assert (result["to_judge"], result["valid"]) == (1, 1)
    assert Judgement.objects.in_use().get(stage="perception").score == 8
    # The error judged again is archived, not deleted: its raw answer stays readable.
    assert Judgement.objects.archived().get(stage="perception").error_kind == "invalid_json"


def test_a_judge_that_answers_nothing_fails_the_run_with_the_reason(system: System) -> None:
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    job = _run_job(system, _config("http://127.0.0.1:9/v1", max_retries=0, timeout_s=0.5))
    assert job.status == JobStatus.FAILED
    assert job.error.startswith(
        "JudgeRunRefused: The judge at http://127.0.0.1:9/v1 answered none of 4 prompts"
    )
    assert "connection error" in job.error


def test_only_one_run_of_a_judge_on_a_system_at_a_time(system: System, make_user) -> None:
    config = _config("http://127.0.0.1:9/v1")
    admin: User = make_user(None, "someone")
    start_judge_run(system, "echoeval-v1", config, started_by=admin)
    with pytest.raises(JudgeRunRefused, match="still queued or running"):
        start_judge_run(system, "echoeval-v1", config, started_by=admin)
