"""The job machinery run in-process: success, failure, cancel, idempotency and stale detection."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from webapp.jobs import JobReporter, cancel_job, job_task, reap_stale_jobs, run_job, start_job
from webapp.models import Job, JobStatus


@job_task("test_boom")
def _boom(job: Job, reporter: JobReporter) -> None:
    reporter.progress(0.5, "half way", force=True)
    raise RuntimeError("the model file is corrupt")


@job_task("test_cancel_midway")
def _cancel_midway(job: Job, reporter: JobReporter) -> dict[str, int]:
    Job.objects.filter(pk=job.pk).update(cancel_requested=True)
    reporter.progress(0.3, "working", force=True)
    return {"should": 0}


def test_a_job_runs_to_success_with_its_result(db: None, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        job = start_job("diagnostic_sleep", parameters={"steps": 3, "delay_s": 0})
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.result == {"steps": 3}
    assert job.progress == 1.0
    assert job.attempts == 1
    assert job.finished_at is not None


def test_a_failing_job_records_the_error_and_traceback(db: None) -> None:
    job = Job.objects.create(kind="test_boom")
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == "RuntimeError: the model file is corrupt"
    assert "Traceback" in job.log
    assert job.result is None


def test_running_the_same_job_twice_does_the_work_once(db: None) -> None:
    job = Job.objects.create(kind="diagnostic_sleep", parameters={"steps": 1, "delay_s": 0})
    run_job(job.pk)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.attempts == 1
    assert job.status == JobStatus.SUCCEEDED


def test_a_missing_job_row_is_ignored_quietly(db: None) -> None:
    run_job(987654)


def test_cancelling_a_queued_job_ends_it_at_once(db: None) -> None:
    job = Job.objects.create(kind="diagnostic_sleep")
    cancel_job(job)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    run_job(job.pk)
    job.refresh_from_db()
    assert job.attempts == 0


def test_a_running_job_stops_at_its_next_progress_report_when_cancelled(db: None) -> None:
    job = Job.objects.create(kind="test_cancel_midway")
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert job.result is None


def test_a_running_job_without_heartbeat_is_requeued_then_failed(db: None, settings) -> None:
    settings.JOB_STALE_AFTER_SECONDS = 5
    settings.JOB_MAX_ATTEMPTS = 2
    long_ago = timezone.now() - timedelta(seconds=60)
    job = Job.objects.create(
        kind="diagnostic_sleep",
        status=JobStatus.RUNNING,
        attempts=1,
        started_at=long_ago,
        heartbeat_at=long_ago,
    )
    fresh = Job.objects.create(
        kind="diagnostic_sleep",
        status=JobStatus.RUNNING,
        attempts=1,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    assert reap_stale_jobs() == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, attempts=2, heartbeat_at=long_ago)
    assert reap_stale_jobs() == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "stopped responding" in job.error
    fresh.refresh_from_db()
    assert fresh.status == JobStatus.RUNNING


def test_the_job_page_shows_progress_and_polls_until_done(client_for, users) -> None:
    job = Job.objects.create(
        kind="diagnostic_sleep",
        status=JobStatus.RUNNING,
        progress=0.42,
        message="Step 4 of 10",
        heartbeat_at=timezone.now(),
    )
    client = client_for("admin")
    page = client.get(reverse("job_detail", args=[job.pk]))
    assert b'aria-valuenow="42"' in page.content
    assert b'hx-trigger="every 1s"' in page.content
    partial = client.get(reverse("job_detail", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert b"<html" not in partial.content
    assert b"Step 4 of 10" in partial.content
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, progress=1.0, result={"ok": 1})
    done = client.get(reverse("job_detail", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert b"hx-trigger" not in done.content
    assert b"Succeeded" in done.content


@pytest.mark.parametrize("bad_queue", ["gpus", ""])
def test_job_kinds_must_name_a_real_queue(bad_queue: str) -> None:
    with pytest.raises(ValueError, match="unknown queue"):
        job_task("test_bad_queue", queue=bad_queue)
