"""An attempt owns its job: once reaped and claimed again, the stalled attempt can write nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from tests.conftest import only_on_postgresql, wait_until
from webapp.celery import app, reap_stale_jobs_task
from webapp.jobs import JobLost, JobReporter, _claim, _finish_attempt, _Heartbeat, reap_stale_jobs
from webapp.models import Job, JobStatus


def stalled_and_reclaimed() -> tuple[Job, Job]:
    """Return (the first attempt as its worker sees it, the job as the second attempt claimed it)."""
    job = Job.objects.create(kind="diagnostic_sleep")
    first = _claim(job.pk)
    assert first is not None
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert reap_stale_jobs() == [job.pk]
    second = _claim(job.pk)
    assert second is not None
    return first, second


def test_a_reaped_attempt_cannot_report_progress_metrics_or_logs(db: None) -> None:
    # given an attempt that stalled, was reaped, and whose job another worker claimed
    first, second = stalled_and_reclaimed()
    reporter = JobReporter(first)

    # when the stalled attempt wakes up and reports, each write is refused
    with pytest.raises(JobLost):
        reporter.progress(0.9, "still here", force=True)
    with pytest.raises(JobLost):
        reporter.metric(7, loss=0.1)
    with pytest.raises(JobLost):
        reporter.log("a line from the past")

    # then the job shows only the second attempt's state
    second.refresh_from_db()
    assert (second.status, second.attempts, second.progress, second.metrics) == (
        JobStatus.RUNNING,
        2,
        0.0,
        [],
    )


def test_a_reaped_attempt_cannot_finish_the_job(db: None) -> None:
    first, second = stalled_and_reclaimed()

    assert _finish_attempt(first, JobStatus.SUCCEEDED, result={"from": "first"}) is False

    second.refresh_from_db()
    assert second.status == JobStatus.RUNNING
    assert second.result is None
    assert _finish_attempt(second, JobStatus.SUCCEEDED, result={"from": "second"}) is True
    second.refresh_from_db()
    assert (second.status, second.result) == (JobStatus.SUCCEEDED, {"from": "second"})


def test_viewing_a_stale_job_does_not_reap_it(db: None, client_for) -> None:
    # given a job whose heartbeat is old (its worker may only be slow)
    job = Job.objects.create(
        kind="diagnostic_sleep",
        status=JobStatus.RUNNING,
        attempts=1,
        started_at=timezone.now() - timedelta(hours=1),
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )

    # when an admin watches its page
    response = client_for("admin").get(reverse("job_detail", args=[job.pk]))

    # then the page reads the job and leaves reaping to beat
    assert response.status_code == 200
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_beat_runs_the_reaper_on_a_schedule(db: None) -> None:
    entry = django_settings.CELERY_BEAT_SCHEDULE["reap-stale-jobs"]
    assert entry["task"] in app.tasks
    schedule = entry["schedule"]
    assert isinstance(schedule, float) and 0 < schedule <= django_settings.JOB_STALE_AFTER_SECONDS
    stale = Job.objects.create(
        kind="diagnostic_sleep",
        status=JobStatus.RUNNING,
        attempts=django_settings.JOB_MAX_ATTEMPTS,
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )

    assert reap_stale_jobs_task() == [stale.pk]
    stale.refresh_from_db()
    assert stale.status == JobStatus.FAILED


@pytest.mark.services
def test_the_heartbeat_survives_its_database_connection_being_killed(
    transactional_db: None, settings, caplog: pytest.LogCaptureFixture
) -> None:
    only_on_postgresql("needs PostgreSQL to terminate the heartbeat's server process")
    settings.JOB_HEARTBEAT_SECONDS = 0.05
    claimed = _claim(Job.objects.create(kind="diagnostic_sleep").pk)
    assert claimed is not None
    heartbeat = _Heartbeat(claimed)
    heartbeat.start()
    try:

        def beats_after(moment: object) -> bool:
            return Job.objects.filter(pk=claimed.pk, heartbeat_at__gt=moment).exists()

        wait_until(lambda: beats_after(claimed.heartbeat_at), 10, "the heartbeat never beat")
        # when the server drops the heartbeat thread's connection (a database restart would too)
        with connection.cursor() as cursor:
            # With a timeout the call returns once those server processes are gone, so any beat
            # stored after `killed_at` came through a new connection.
            cursor.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        killed_at = timezone.now()

        # then it logs, reconnects, and keeps the job alive
        wait_until(
            lambda: "heartbeat failed; retrying" in caplog.text,
            10,
            "the heartbeat never saw its connection go",
        )
        wait_until(lambda: beats_after(killed_at), 10, "the heartbeat died with its connection")
        assert heartbeat.is_alive()
        assert not heartbeat.lost.is_set()
    finally:
        heartbeat.stopped.set()
        heartbeat.join(timeout=5)
