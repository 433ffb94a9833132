"""A real Celery worker process runs jobs from the real broker, and its death is detected."""

from __future__ import annotations

import pytest

from tests.conftest import wait_until
from webapp.jobs import reap_stale_jobs, start_job
from webapp.models import Job, JobStatus

pytestmark = pytest.mark.services

FAST_HEARTBEAT = {"ECHOSTUDIO_JOB_HEARTBEAT_SECONDS": "0.2", "ECHOSTUDIO_JOB_STALE_AFTER_SECONDS": "1.5"}


def _status(job: Job) -> str:
    job.refresh_from_db()
    return job.status


def test_a_worker_process_runs_an_enqueued_job_to_success(worker_factory) -> None:
    worker = worker_factory(**FAST_HEARTBEAT)
    job = start_job("diagnostic_sleep", parameters={"steps": 3, "delay_s": 0.1})
    wait_until(lambda: _status(job) == JobStatus.SUCCEEDED, 60, f"job never succeeded:\n{worker.log_text()}")
    assert job.result == {"steps": 3}
    assert job.worker and ":" in job.worker


def test_killing_the_worker_mid_job_does_not_leave_it_running(worker_factory, settings) -> None:
    settings.JOB_STALE_AFTER_SECONDS = 1.5
    settings.JOB_MAX_ATTEMPTS = 1
    worker = worker_factory(**FAST_HEARTBEAT, ECHOSTUDIO_JOB_MAX_ATTEMPTS="1")
    job = start_job("diagnostic_sleep", parameters={"steps": 200, "delay_s": 0.1})
    wait_until(
        lambda: _status(job) == JobStatus.RUNNING and job.progress > 0,
        60,
        f"job never started:\n{worker.log_text()}",
    )
    worker.kill()
    wait_until(
        lambda: bool(reap_stale_jobs()) or _status(job) != JobStatus.RUNNING,
        20,
        "the dead worker's job was never detected",
    )
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "stopped responding" in job.error


def test_a_job_whose_worker_died_is_rerun_by_the_next_worker(worker_factory, settings) -> None:
    settings.JOB_STALE_AFTER_SECONDS = 1.5
    settings.JOB_MAX_ATTEMPTS = 2
    first = worker_factory(**FAST_HEARTBEAT)
    job = start_job("diagnostic_sleep", parameters={"steps": 30, "delay_s": 0.1})
    wait_until(
        lambda: _status(job) == JobStatus.RUNNING and job.progress > 0,
        60,
        f"job never started:\n{first.log_text()}",
    )
    first.kill()
    wait_until(lambda: bool(reap_stale_jobs()), 20, "the dead worker's job was never detected")
    assert _status(job) == JobStatus.QUEUED
    second = worker_factory(**FAST_HEARTBEAT)
    wait_until(lambda: _status(job) == JobStatus.SUCCEEDED, 90, f"job was not re-run:\n{second.log_text()}")
    assert job.attempts == 2
