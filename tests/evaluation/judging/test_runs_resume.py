"""A judge run whose worker is killed mid-run is finished by the next worker, judging nothing twice."""

from __future__ import annotations

from collections import Counter

import pytest

from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from tests.conftest import wait_until
from tests.evaluation.judging_support import BenchmarkItemFactory, prompt_key, rubric_judge
from tests.factories import ModelOutputFactory
from tests.support.fake_chat_server import running_chat_server
from webapp.jobs import reap_stale_jobs
from webapp.models import Job, JobStatus

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("media_root")]

FAST_HEARTBEAT = {"ECHOSTUDIO_JOB_HEARTBEAT_SECONDS": "0.2", "ECHOSTUDIO_JOB_STALE_AFTER_SECONDS": "1.5"}


def _job(job_id: int) -> Job:
    return Job.objects.get(pk=job_id)


def test_a_run_resumed_after_its_worker_is_killed_judges_no_stage_twice(worker_factory, settings) -> None:
    settings.JOB_STALE_AFTER_SECONDS = 1.5
    settings.JOB_MAX_ATTEMPTS = 2
    # The worker runs in another process: it must find the audio where this test stores it.
    worker_env = {
        **FAST_HEARTBEAT,
        "ECHOSTUDIO_MEDIA_ROOT": settings.STORAGES["default"]["OPTIONS"]["location"],
    }
    system = System.objects.create(name="Omni-X")
    for number in range(6):
        ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id=f"EE-{number}"))
    expected = 6 * 4
    # One prompt at a time, each answered after 0.25 s: the kill lands mid-run with one in flight.
    with running_chat_server(rubric_judge(delay_s=0.25)) as server:
        config = JudgeConfig.objects.create(
            name="judge", base_url=server.base_url, model="judge-model", max_concurrency=1, attach_audio=True
        )
        first = worker_factory(**worker_env)
        run = start_judge_run(system, "echoeval-v1", config, started_by=None)
        assert run.job is not None
        job_id = run.job.pk
        wait_until(lambda: Judgement.objects.count() >= 6, 60, f"no judging happened:\n{first.log_text()}")

        first.kill()
        stored_before_kill = set(Judgement.objects.values_list("prompt_key", flat=True))
        assert _job(job_id).status == JobStatus.RUNNING
        wait_until(lambda: bool(reap_stale_jobs()), 20, "the dead worker's run was never detected")
        assert _job(job_id).status == JobStatus.QUEUED

        second = worker_factory(**worker_env)
        wait_until(
            lambda: _job(job_id).status == JobStatus.SUCCEEDED,
            90,
            f"the run was not resumed:\n{second.log_text()}",
        )
        requests = Counter(prompt_key(request) for request in server.chat_requests)

    job = _job(job_id)
    assert job.attempts == 2
    assert Judgement.objects.count() == expected
    assert Judgement.objects.filter(score__isnull=True).count() == 0
    # Every stage stored before the kill was never asked again; at most the one prompt in flight
    # at the kill was asked twice.
    assert all(requests[key] == 1 for key in stored_before_kill)
    assert len(requests) == expected
    assert sum(requests.values()) <= expected + 1
    assert job.result is not None and job.result["valid"] + len(stored_before_kill) >= expected - 1
