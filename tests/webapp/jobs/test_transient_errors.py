"""A job rides out database and broker connection errors with capped backoff, and fails only for
its own reasons or an outage longer than every retry; queued jobs are sent again a capped number of
times."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest.mock import patch

import pytest
from django.db import IntegrityError, OperationalError
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from webapp.db import is_transient, retry_transient
from webapp.jobs import JobReporter, job_task, resend_unsent_jobs, run_job
from webapp.lib.backoff import Backoff
from webapp.models import Job, JobStatus

QUICK = Backoff(first=0.01, cap=0.02, retries=3)


class Flaky:
    """Fails with `error` the first `failures` calls, then answers."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "answer"


def test_a_connection_error_is_retried_after_doubling_waits() -> None:
    # given work that loses its database connection twice
    work = Flaky(2, OperationalError("server closed the connection unexpectedly"))
    waits: list[float] = []

    # when it is retried
    answer = retry_transient(work, what="test", backoff=Backoff(0.5, 10.0, 5), sleep=waits.append)

    # then the third call answers, after waits of 0.5 s and 1 s
    assert (answer, work.calls, waits) == ("answer", 3, [0.5, 1.0])


def test_retries_are_capped_and_the_last_error_raised() -> None:
    work = Flaky(10, BrokerUnreachable("Error 111 connecting to 127.0.0.1:6379"))
    waits: list[float] = []

    with pytest.raises(BrokerUnreachable):
        retry_transient(work, what="test", backoff=Backoff(0.5, 1.0, 3), sleep=waits.append)

    assert (work.calls, waits) == (4, [0.5, 1.0, 1.0])


def test_an_error_a_retry_cannot_mend_is_raised_at_once() -> None:
    work = Flaky(1, IntegrityError("duplicate key"))
    waits: list[float] = []

    with pytest.raises(IntegrityError):
        retry_transient(work, what="test", backoff=QUICK, sleep=waits.append)

    assert (work.calls, waits) == (1, [])


def test_a_connection_error_wrapped_by_another_counts_as_transient() -> None:
    try:
        try:
            raise OperationalError("terminating connection due to administrator command")
        except OperationalError as exc:
            raise RuntimeError("the stage stopped") from exc
    except RuntimeError as wrapped:
        assert is_transient(wrapped)
    assert not is_transient(ValueError("bad input"))


def test_redis_and_broker_connection_errors_count_as_transient() -> None:
    # looked up from the loaded libraries, not imported by webapp.db (the web process skips Redis)
    from kombu.exceptions import OperationalError as BrokerUnreachable
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeout

    assert is_transient(RedisConnectionError("Connection refused"))
    assert is_transient(RedisTimeout("Timeout reading from socket"))
    assert is_transient(BrokerUnreachable("broker unreachable"))
    assert not is_transient(ValueError("bad input"))


CALLS: dict[int, int] = {}


@job_task("test_loses_its_connection", title="Test: loses its database connection")
def _loses_its_connection(job: Job, reporter: JobReporter) -> dict[str, Any]:
    CALLS[job.pk] = CALLS.get(job.pk, 0) + 1
    reporter.progress(0.5, f"call {CALLS[job.pk]}", force=True)
    if CALLS[job.pk] <= int(job.parameters["failures"]):
        raise OperationalError("server closed the connection unexpectedly")
    return {"calls": CALLS[job.pk]}


@pytest.mark.django_db(transaction=True)
def test_a_job_resumes_after_a_connection_error_and_succeeds_once(settings) -> None:
    # (transaction=True: a job runs outside any transaction, and only there is a retry safe)
    settings.JOB_RETRY_FIRST_SECONDS, settings.JOB_RETRY_MAX_SECONDS, settings.JOB_RETRY_TRANSIENT = (
        0.01,
        0.02,
        3,
    )
    job = Job.objects.create(kind="test_loses_its_connection", parameters={"failures": 2})

    run_job(job.pk)

    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == (JobStatus.SUCCEEDED, 1, {"calls": 3})


@pytest.mark.django_db(transaction=True)
def test_a_job_fails_with_a_plain_reason_when_the_outage_outlasts_every_retry(settings) -> None:
    settings.JOB_RETRY_FIRST_SECONDS, settings.JOB_RETRY_MAX_SECONDS, settings.JOB_RETRY_TRANSIENT = (
        0.01,
        0.02,
        2,
    )
    job = Job.objects.create(kind="test_loses_its_connection", parameters={"failures": 99})

    run_job(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("The database or the broker stayed unreachable through 2 retries")
    assert "start the job again to resume it" in job.error
    assert CALLS[job.pk] == 3


def _queued(sends: int, minutes_ago: float) -> Job:
    job = Job.objects.create(kind="diagnostic_sleep", sends=sends)
    sent_at = timezone.now() - timedelta(minutes=minutes_ago)
    Job.objects.filter(pk=job.pk).update(enqueued_at=sent_at, created_at=sent_at - timedelta(hours=20))
    return job


def test_resends_wait_longer_each_time_and_stop_at_the_cap(db: None, settings) -> None:
    # given jobs no worker took: sent once 11 minutes ago, twice 15 minutes ago, the most times long ago
    settings.JOB_RESEND_QUEUED_AFTER_SECONDS, settings.JOB_MAX_SENDS = 600.0, 4
    due, waiting, spent = _queued(1, 11), _queued(2, 15), _queued(4, 24 * 60)

    # when the reaper looks at them
    with patch("webapp.celery.run_job_task.apply_async") as send:
        sent = resend_unsent_jobs()

    # then the first is sent again (its wait was 10 minutes), the second waits 20, the last fails
    assert sent == [due.pk]
    send.assert_called_once_with(args=(due.pk,), queue="default")
    for job in (due, waiting, spent):
        job.refresh_from_db()
    assert (due.sends, waiting.sends) == (2, 2)
    assert (due.status, waiting.status, spent.status) == (
        JobStatus.QUEUED,
        JobStatus.QUEUED,
        JobStatus.FAILED,
    )
    assert spent.error.startswith("No worker started this job: it was sent to queue 'default' 4 times")
