"""A real Celery worker process runs jobs from the real broker, and its death is detected."""

from __future__ import annotations

from importlib import metadata

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


def test_a_worker_deployed_without_git_records_the_commit_its_deploy_names(worker_factory) -> None:
    worker = worker_factory(**FAST_HEARTBEAT, ECHOSTUDIO_COMMIT="release-2026.12-1a2b3c")
    job = start_job("diagnostic_sleep", parameters={"steps": 1, "delay_s": 0})
    wait_until(lambda: _status(job) == JobStatus.SUCCEEDED, 60, f"job never succeeded:\n{worker.log_text()}")
    assert job.provenance["commit"] == "release-2026.12-1a2b3c"
    assert job.provenance["torch"] == metadata.version("torch")


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


def test_a_stalled_job_is_never_run_by_two_workers_and_ends_once(worker_factory, settings) -> None:
    # given two real workers, one of which is running a job
    settings.JOB_STALE_AFTER_SECONDS = 1.5
    settings.JOB_MAX_ATTEMPTS = 2
    workers = [worker_factory(**FAST_HEARTBEAT), worker_factory(**FAST_HEARTBEAT)]
    job = start_job("diagnostic_sleep", parameters={"steps": 25, "delay_s": 0.1})
    wait_until(lambda: _status(job) == JobStatus.RUNNING and job.progress > 0, 60, "job never started")
    first = next(worker for worker in workers if worker.owns_pid(int(job.worker.rsplit(":", 1)[1])))
    second = next(worker for worker in workers if worker is not first)

    # when the first worker stalls past the stale time, the reaper re-queues the job and the
    # second worker claims it; then the first wakes up mid-step
    first.pause()
    try:
        wait_until(lambda: bool(reap_stale_jobs()), 20, "the stalled job was never reaped")
        wait_until(lambda: _status(job) == JobStatus.RUNNING and job.attempts == 2, 60, "not re-claimed")
    finally:
        first.resume()

    # then the job ends once, as the second attempt, and no step of the first lands after the
    # second attempt began
    wait_until(lambda: _status(job) == JobStatus.SUCCEEDED, 90, f"not finished:\n{second.log_text()}")
    assert second.owns_pid(int(job.worker.rsplit(":", 1)[1]))
    attempts_in_order = [int(point["attempt"]) for point in job.metrics]
    assert attempts_in_order == sorted(attempts_in_order)
    assert [int(point["step"]) for point in job.metrics if point["attempt"] == 2] == list(range(1, 26))
    wait_until(
        lambda: "no longer owns the job" in first.log_text() or "taken over" in first.log_text(),
        20,
        f"the stalled attempt never noticed it lost the job:\n{first.log_text()}",
    )
    finished_at = job.finished_at
    job.refresh_from_db()
    assert (job.status, job.finished_at, job.result) == (JobStatus.SUCCEEDED, finished_at, {"steps": 25})


def test_a_job_started_while_the_broker_is_down_runs_once_the_reaper_sends_it(worker_factory) -> None:
    import subprocess
    import sys
    from datetime import timedelta

    from django.utils import timezone

    from tests.conftest import ROOT, _worker_environment

    # given: a job started by a process whose broker does not answer (nothing listens on port 9)
    env = _worker_environment({"DJANGO_SETTINGS_MODULE": "webapp.settings"})
    # set after: _worker_environment pins every process to the test's own broker
    env["CELERY_BROKER_URL"] = "redis://127.0.0.1:9/0"
    code = (
        "import django; django.setup(); from webapp.jobs import start_job; "
        "print(start_job('diagnostic_sleep', parameters={'steps': 2, 'delay_s': 0.05}).pk)"
    )
    started = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    # then: starting it did not fail, and the job waits, queued, not sent
    assert started.returncode == 0, started.stderr[-2000:]
    job = Job.objects.get(pk=int(started.stdout.split()[-1]))
    assert (job.status, job.enqueued_at) == (JobStatus.QUEUED, None)

    # when: the reaper runs with the broker back (beat runs it every few seconds)
    worker = worker_factory(**FAST_HEARTBEAT)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=10))
    reap_stale_jobs()

    # then: it is sent once more and runs to its end, once
    wait_until(lambda: _status(job) == JobStatus.SUCCEEDED, 60, f"job never ran:\n{worker.log_text()}")
    assert job.attempts == 1
    assert job.enqueued_at is not None


def test_a_worker_given_its_own_var_dir_still_consumes_the_tests_broker(worker_factory, tmp_path) -> None:
    # given a worker whose ECHOSTUDIO_VAR_DIR (which also holds the file broker's folder) is moved
    worker = worker_factory(**FAST_HEARTBEAT, ECHOSTUDIO_VAR_DIR=str(tmp_path / "elsewhere"))
    # when a job is enqueued on the test's broker, then that worker runs it
    job = start_job("diagnostic_sleep", parameters={"steps": 1, "delay_s": 0.0})
    wait_until(
        lambda: _status(job) == JobStatus.SUCCEEDED, 60, f"the worker never saw the job:\n{worker.log_text()}"
    )
