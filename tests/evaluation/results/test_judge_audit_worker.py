"""A judge audit on a real worker: it shows progress, can be cancelled, and survives a killed worker."""

from __future__ import annotations

import pytest

from evaluation.judging.models import JudgeCacheEntry
from evaluation.results.judge_audit import start_judge_audit
from tests.conftest import wait_until
from tests.evaluation.results.audit_support import audited_system, length_biased_judge, stub_config
from tests.support.fake_chat_server import running_chat_server
from webapp.jobs import cancel_job, reap_stale_jobs
from webapp.models import Job, JobStatus

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("media_root")]

FAST_HEARTBEAT = {"ECHOSTUDIO_JOB_HEARTBEAT_SECONDS": "0.2", "ECHOSTUDIO_JOB_STALE_AFTER_SECONDS": "1.5"}


def _job(job_id: int) -> Job:
    return Job.objects.get(pk=job_id)


def _worker_env(settings) -> dict[str, str]:
    return {**FAST_HEARTBEAT, "ECHOSTUDIO_MEDIA_ROOT": settings.STORAGES["default"]["OPTIONS"]["location"]}


def test_an_audit_resumed_after_its_worker_is_killed_asks_nothing_twice(worker_factory, settings) -> None:
    settings.JOB_STALE_AFTER_SECONDS = 1.5
    settings.JOB_MAX_ATTEMPTS = 2
    audited_system(4)
    # One prompt at a time, each answered after 0.05 s: the kill lands mid-audit.
    with running_chat_server(length_biased_judge(delay_s=0.05)) as server:
        judge = stub_config("biased", server.base_url, max_concurrency=1)
        first = worker_factory(**_worker_env(settings))
        audit = start_judge_audit(judge, "echoeval-v1", repeats=2)
        assert audit.job is not None
        job_id = audit.job.pk
        wait_until(lambda: _job(job_id).progress > 0, 60, f"no progress shown:\n{first.log_text()}")
        wait_until(lambda: JudgeCacheEntry.objects.count() >= 20, 60, "no judging happened")

        first.kill()
        assert _job(job_id).status == JobStatus.RUNNING
        wait_until(lambda: bool(reap_stale_jobs()), 20, "the dead worker's audit was never detected")
        second = worker_factory(**_worker_env(settings))
        wait_until(
            lambda: _job(job_id).status == JobStatus.SUCCEEDED, 90, f"not resumed:\n{second.log_text()}"
        )
        asked = len(server.requests)

    job = _job(job_id)
    assert job.attempts == 2 and job.progress == 1.0
    # Every answer received was cached and came from the cache on the second attempt: at most the
    # one prompt in flight at the kill was asked twice.
    assert asked <= JudgeCacheEntry.objects.count() + 1
    assert isinstance(job.result, dict) and job.result["sensitivity"]["length"]["excludes_zero"]


def test_an_audit_can_be_cancelled_while_it_runs(worker_factory, settings) -> None:
    audited_system(4)
    with running_chat_server(length_biased_judge(delay_s=0.1)) as server:
        judge = stub_config("slow", server.base_url, max_concurrency=1)
        worker = worker_factory(**_worker_env(settings))
        audit = start_judge_audit(judge, "echoeval-v1", repeats=3)
        assert audit.job is not None
        job_id = audit.job.pk
        wait_until(lambda: _job(job_id).progress > 0, 60, f"no progress shown:\n{worker.log_text()}")
        cancel_job(_job(job_id))
        wait_until(
            lambda: _job(job_id).status == JobStatus.CANCELLED, 30, f"not cancelled:\n{worker.log_text()}"
        )
        asked = len(server.requests)
    job = _job(job_id)
    assert job.result is None or "consistency" not in job.result
    assert asked < 4 * 3 * 3  # it stopped before judging every repeat
