"""The Job machinery every long task uses: start, run with progress, cancel, recover from dead workers.

A job function is a plain callable `(job, reporter) -> result dict` registered with `@job_task`.
A job over many rows puts its tally (`webapp.lib.row_outcome.RowTally`) in that dict, and ends
succeeded, finished with errors or failed by it (`ended`); one row's failure is that row's error,
never an exception that sinks the job.
The Celery task around it takes only the job id, so a redelivered message (acks_late) or a manual
re-run finds the row and decides from its status whether there is anything left to do.

Ownership: `_claim` makes one attempt (`attempts = N`) the owner of a running job. Every later
write of that attempt (progress, metrics, log, heartbeat, the final result) is a conditional
UPDATE on `(pk, attempts=N, status=running)`, so once a stalled attempt has been reaped and
another worker has claimed the job, the stalled one can write nothing: its next write finds no
row, raises JobLost, and it stops without a result. Rows a job claims to work on (a build stage's
samples) carry the same owner, `claimed_job` + `claimed_attempt` (`attempt_mark`), and are written
under the same rule (`claimed_by_attempt`), so one scheme decides what any attempt may still write.
Reaping is done by a periodic task (Celery
beat), by workers as they start, or by `manage.py reap_jobs`; never by a page view, where a slow
request could make a live job look dead.

Transient errors: a database or broker connection error (a PostgreSQL restart) is retried with
capped exponential backoff (`webapp.db.retry_transient`), in place for the machinery's own writes
(claim, progress, metrics, log, cancel checks, the final result), and by calling the job function
again for an error that escapes it. Job functions can be called again already (a job re-queued
after its worker died runs from the top): they skip what is done (judgements stored, build rows
finished, a checkpoint recorded), so the second call resumes from the last finished row. A job
fails for a connection error only when it outlasts every retry.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from webapp import audit
from webapp.db import compare_and_set, is_transient, job_backoff, retry_transient
from webapp.lib import row_outcome
from webapp.lib.backoff import Backoff
from webapp.lib.provenance import current_provenance
from webapp.models import FINISHED_STATUSES, Job, JobStatus, User

logger = logging.getLogger(__name__)
# A job whose send failed is retried by the reaper once this old (its on_commit send may still be
# on its way for a moment after the row is committed).
UNSENT_GRACE_SECONDS = 2.0

QUEUES = ("default", "gpu")
JobResult = dict[str, Any] | None
JobFunction = Callable[[Job, "JobReporter"], JobResult]


class JobCancelled(Exception):
    """Raised inside a job function when an admin asked to cancel it."""


class JobLost(Exception):
    """Raised inside a job function whose attempt no longer owns the job (it was reaped and re-queued)."""


class JobNotRegistered(KeyError):
    """No job function has been registered under this kind."""


@dataclass(frozen=True)
class JobSpec:
    kind: str
    queue: str
    function: JobFunction
    title: str


_REGISTRY: dict[str, JobSpec] = {}


def job_task(kind: str, *, queue: str = "default", title: str = "") -> Callable[[JobFunction], JobFunction]:
    """Register a job function under `kind` and create the Celery task that runs it."""
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}; use one of {QUEUES}")

    def register(function: JobFunction) -> JobFunction:
        _REGISTRY[kind] = JobSpec(kind=kind, queue=queue, function=function, title=title or kind)
        return function

    return register


def job_spec(kind: str) -> JobSpec:
    """Return the registered spec for a job kind."""
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise JobNotRegistered(kind) from None


def registered_kinds() -> list[str]:
    """Return every registered job kind, sorted."""
    return sorted(_REGISTRY)


def start_job(
    kind: str,
    *,
    started_by: User | None = None,
    parameters: dict[str, Any] | None = None,
    queue: str | None = None,
) -> Job:
    """Create a queued Job and enqueue it once the surrounding transaction commits.

    `queue` overrides the kind's registered queue with another of `settings.JOB_QUEUES`.
    """
    spec = job_spec(kind)
    if queue is not None and queue not in settings.JOB_QUEUES:
        raise ValueError(f"unknown queue {queue!r}; use one of {settings.JOB_QUEUES}")
    with transaction.atomic():
        job = Job.objects.create(
            kind=kind,
            queue=queue or spec.queue,
            parameters=parameters or {},
            started_by=started_by,
            message="Queued",
        )
        audit.record(
            actor=started_by,
            action=audit.JOB_STARTED,
            obj=job,
            after=audit.fields_of(job, "kind", "queue", "status", "parameters"),
        )
        # on_commit: the worker must never receive an id whose row it cannot see yet.
        transaction.on_commit(lambda: enqueue(job))
    return job


def enqueue(job: Job) -> bool:
    """Send the job's id to its queue; return False when the broker could not be reached.

    A job is committed before its id is sent (on_commit), so a broker that is down (restarting,
    unreachable) must not turn the request that started the job into an error after the fact,
    nor leave the job queued forever: the job stays queued without `enqueued_at`, and the reaper
    sends it again (`resend_unsent_jobs`). A broker that restarts without persistence loses the
    messages it held; a job queued longer than JOB_RESEND_QUEUED_AFTER_SECONDS is sent again too.
    A copy delivered twice is harmless: `_claim` starts a job once.
    """
    from webapp.celery import run_job_task

    try:
        run_job_task.apply_async(args=(job.pk,), queue=job.queue)
    except Exception:
        logger.warning("job %s: the broker did not take it; the reaper sends it again", job.pk, exc_info=True)
        return False
    Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(
        enqueued_at=timezone.now(), sends=F("sends") + 1
    )
    return True


def resend_backoff() -> Backoff:
    """Return how long a queued job waits after each send before it is sent again (10 min, 20, 40 ...
    by default, at most 32 times the first wait), and how many sends it gets (JOB_MAX_SENDS)."""
    first = float(settings.JOB_RESEND_QUEUED_AFTER_SECONDS)
    return Backoff(first=first, cap=first * 32, retries=settings.JOB_MAX_SENDS)


def resend_unsent_jobs() -> list[int]:
    """Send again the queued jobs the broker never took, or may have lost; return their ids.

    A job the broker took is sent again only once its wait (`resend_backoff`) has passed, each wait
    twice the last. A job sent JOB_MAX_SENDS times whose last wait passed too is failed with the
    reason: no worker takes its queue, and sending it forever would hide that.
    """
    now = timezone.now()
    backoff = resend_backoff()
    lost = Job.objects.filter(status=JobStatus.QUEUED).filter(
        Q(enqueued_at__isnull=True, created_at__lt=now - timedelta(seconds=UNSENT_GRACE_SECONDS))
        | Q(enqueued_at__lt=now - timedelta(seconds=backoff.first))
    )
    sent: list[int] = []
    for job in lost.only("pk", "queue", "sends", "enqueued_at", "created_at"):
        if job.enqueued_at is not None:
            if job.enqueued_at > now - timedelta(seconds=backoff.delay(max(0, job.sends - 1))):
                continue
            if job.sends >= backoff.retries:
                _give_up_sending(job, now)
                continue
            logger.warning(
                "job %s: no worker started it since its last send to queue %r; sending it again "
                "(send %d of at most %d)",
                job.pk,
                job.queue,
                job.sends + 1,
                backoff.retries,
            )
        if enqueue(job):
            sent.append(job.pk)
    return sent


def _give_up_sending(job: Job, now: Any) -> None:
    hours = (now - job.created_at).total_seconds() / 3600
    error = (
        f"No worker started this job: it was sent to queue {job.queue!r} {job.sends} times over "
        f"{hours:.1f} h (the most ECHOSTUDIO_JOB_MAX_SENDS allows). Check that a worker consumes that "
        "queue, then start the job again."
    )
    # Conditional on the job still waiting on that very send: a worker that claims it meanwhile wins.
    if compare_and_set(
        Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED, sends=job.sends),
        **_final_fields(JobStatus.FAILED, result=None, error=error, message="Never started"),
    ):
        logger.error("job %s: %s", job.pk, error)


def cancel_job(job: Job, actor: User | None = None) -> Job:
    """Cancel a queued job at once, or ask a running one to stop at its next progress report."""
    with transaction.atomic():
        locked = Job.objects.select_for_update().get(pk=job.pk)
        before = audit.fields_of(locked, *CANCEL_AUDIT_FIELDS)
        if locked.status == JobStatus.QUEUED:
            locked.status = JobStatus.CANCELLED
            locked.finished_at = timezone.now()
            locked.message = "Cancelled before it started"
            locked.save(update_fields=["status", "finished_at", "message"])
        elif locked.status == JobStatus.RUNNING:
            locked.cancel_requested = True
            locked.message = "Cancelling…"
            locked.save(update_fields=["cancel_requested", "message"])
        after = audit.fields_of(locked, *CANCEL_AUDIT_FIELDS)
        if after != before:
            audit.record(actor=actor, action=audit.JOB_CANCELLED, obj=locked, before=before, after=after)
    return locked


# What cancelling changes of a job: its status when queued, its cancel request when running.
CANCEL_AUDIT_FIELDS = ("status", "cancel_requested")


class JobReporter:
    """Reports progress and metrics to the job row from inside a job function."""

    def __init__(self, job: Job, *, min_interval_s: float = 0.2) -> None:
        self.job = job
        self._owned = owned_by_attempt(job)
        self._min_interval_s = min_interval_s
        self._last_write = 0.0
        self._metrics: list[dict[str, Any]] = list(job.metrics or [])
        self._log: list[str] = [job.log] if job.log else []

    def progress(self, fraction: float, message: str = "", *, force: bool = False) -> None:
        """Record progress in [0, 1]; raises JobCancelled when a cancel was requested."""
        now = time.monotonic()
        if not force and now - self._last_write < self._min_interval_s and fraction < 1.0:
            return
        self._last_write = now
        fraction = max(0.0, min(1.0, float(fraction)))
        self._write(progress=fraction, message=message[:500], heartbeat_at=timezone.now())
        self.job.progress, self.job.message = fraction, message
        self.check_cancelled()

    def metric(self, step: int, **values: float) -> None:
        """Append one point of a metric time series (loss, rho, reward...) shown as charts."""
        self._metrics.append({"step": step, **{k: float(v) for k, v in values.items()}})
        # Kept on the job too: a job called again in this attempt skips the steps it already charted.
        self.job.metrics = self._metrics
        self._write(metrics=self._metrics, heartbeat_at=timezone.now())

    def log(self, line: str) -> None:
        """Append a line to the job's log."""
        self._log.append(f"{timezone.now():%H:%M:%S} {line}")
        # Kept on the job too: a failure appends its traceback to job.log, which must hold these lines.
        self.job.log = "\n".join(self._log)[-100_000:]
        self._write(log=self.job.log)

    def _write(self, **fields: Any) -> None:
        # Retried in place: a training loop reporting its step survives a database restart
        # without losing the steps it made.
        written = retry_transient(
            lambda: compare_and_set(self._owned, **fields), what=f"job {self.job.pk}: reporting"
        )
        if not written:
            raise JobLost(f"attempt {self.job.attempts} of job {self.job.pk} no longer owns it")

    def check_cancelled(self) -> None:
        """Raise JobCancelled when an admin asked this job to stop."""
        if self.should_cancel():
            raise JobCancelled()

    def should_cancel(self) -> bool:
        """Return True when a cancel was requested (for code that must not raise mid-step)."""
        return retry_transient(
            Job.objects.filter(pk=self.job.pk, cancel_requested=True).exists,
            what=f"job {self.job.pk}: checking for a cancel",
        )


class _Heartbeat(threading.Thread):
    """Touches heartbeat_at while a job function runs, so a long silent step is not mistaken for death.

    A failed beat (database restart, dropped connection) is logged and retried with a fresh
    connection at the next interval: a thread that died on its first error would let a live job
    look stale and be run a second time elsewhere.
    """

    def __init__(self, job: Job) -> None:
        super().__init__(daemon=True, name=f"job-{job.pk}-heartbeat")
        self.job_id = job.pk
        self._owned = owned_by_attempt(job)
        self.stopped = threading.Event()
        self.lost = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.JOB_HEARTBEAT_SECONDS):
                if not self.beat():
                    self.lost.set()
                    logger.warning(
                        "job %s: this attempt no longer owns the job; heartbeat stops", self.job_id
                    )
                    return
        finally:
            connection.close()

    def beat(self) -> bool:
        """Touch heartbeat_at once; return False only when this attempt has lost the job."""
        try:
            return bool(compare_and_set(self._owned, heartbeat_at=timezone.now()))
        except Exception:
            logger.warning("job %s: heartbeat failed; retrying", self.job_id, exc_info=True)
            # The connection may be broken for good; the next query opens a new one.
            connection.close()
            return True


def owned_by_attempt(job: Job) -> QuerySet[Job]:
    """Return the job's row as long as the attempt `job` was claimed as still owns it.

    A reporter made for a job that was never claimed (a tool or test calling a job function
    directly) writes to the row unconditionally.
    """
    rows = Job.objects.filter(pk=job.pk)
    if job.status == JobStatus.RUNNING:
        rows = rows.filter(attempts=job.attempts, status=JobStatus.RUNNING)
    return rows


def attempt_mark(job: Job) -> dict[str, Any]:
    """Return the columns that mark a work row as claimed by this attempt of `job`."""
    return {"claimed_job": job, "claimed_attempt": job.attempts}


def claimed_by_attempt(rows: QuerySet[Any], job: Job) -> QuerySet[Any]:
    """Return those of `rows` (with `attempt_mark`'s columns) still claimed by this attempt of `job`."""
    return rows.filter(**attempt_mark(job))


def claimed_by_earlier_attempt(job: Job) -> Q:
    """Match work rows an earlier attempt of `job` claimed (its worker died; this attempt takes over),
    or this attempt before a connection error made `run_job` call its function again.

    Only ever asked as a job function begins, when none of this attempt's work is in flight."""
    return Q(claimed_job=job, claimed_attempt__lte=job.attempts)


def _claim(job_id: int) -> Job | None:
    """Mark the job running for this process, or return None when there is nothing to do."""
    with transaction.atomic():
        # select_for_update: two deliveries of the same message must not both start the work.
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status in FINISHED_STATUSES:
            return None
        if job.status == JobStatus.RUNNING and not job.is_stale():
            return None
        if job.cancel_requested:
            _finish(job, JobStatus.CANCELLED, message="Cancelled")
            return None
        if job.attempts >= settings.JOB_MAX_ATTEMPTS:
            _finish(
                job, JobStatus.FAILED, error=f"Gave up after {job.attempts} attempts; the worker kept dying."
            )
            return None
        now = timezone.now()
        job.status = JobStatus.RUNNING
        job.attempts += 1
        job.started_at = now
        job.heartbeat_at = now
        job.worker = f"{socket.gethostname()}:{os.getpid()}"
        job.message = "Started" if job.attempts == 1 else f"Restarted (attempt {job.attempts})"
        # Per attempt: a job restarted on another worker ran (from then on) with that worker's code.
        job.provenance = current_provenance()
        job.save(
            update_fields=[
                "status",
                "attempts",
                "started_at",
                "heartbeat_at",
                "worker",
                "message",
                "provenance",
            ]
        )
        return job


def _finish(job: Job, status: str, *, result: JobResult = None, error: str = "", message: str = "") -> None:
    """End a job the caller holds locked (claim and reap decide under select_for_update)."""
    fields = _final_fields(status, result=result, error=error, message=message)
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=list(fields))


def _finish_attempt(
    job: Job, status: str, *, result: JobResult = None, error: str = "", message: str = ""
) -> bool:
    """End the job as the attempt that claimed it; return False (and write nothing) when that
    attempt was reaped meanwhile, so a second worker's run is the only one that counts."""
    fields = _final_fields(status, result=result, error=error, message=message)
    if compare_and_set(owned_by_attempt(job), **fields):
        return True
    logger.warning(
        "job %s: attempt %s lost the job before finishing; its outcome is dropped", job.pk, job.attempts
    )
    return False


def _final_fields(status: str, *, result: JobResult, error: str, message: str) -> dict[str, Any]:
    fields: dict[str, Any] = {"status": status, "finished_at": timezone.now(), "error": error}
    if status in (JobStatus.SUCCEEDED, JobStatus.FINISHED_WITH_ERRORS) or result is not None:
        # A job that failed by its rows (`row_outcome`) keeps its result: its counts say why.
        fields["result"] = result
    if status in (JobStatus.SUCCEEDED, JobStatus.FINISHED_WITH_ERRORS):
        fields["progress"] = 1.0
    fields["message"] = message or {"succeeded": "Done", "failed": "Failed", "cancelled": "Cancelled"}.get(
        status, ""
    )
    return fields


def ended(result: JobResult) -> tuple[str, str, str]:
    """Return (status, error, message) of a job function that returned `result`.

    A job over many rows says so with a tally under ``row_outcome.RESULT_KEY`` (`RowTally.as_result`);
    its status is then the tally's (succeeded, finished with errors, failed) and its message the
    tally in words. A job without one succeeded.
    """
    tally = row_outcome.tally_of(result)
    if tally is None:
        return JobStatus.SUCCEEDED, "", ""
    sentence = tally.sentence()
    return tally.status, sentence if tally.status == JobStatus.FAILED else "", sentence[:500]


def run_job(job_id: int) -> None:
    """Run one job to its end in this process; safe to call again for the same id."""
    # Celery's Django fixup closes stale connections around each task; nothing to do here.
    job = retry_transient(lambda: _claim(job_id), what=f"job {job_id}: claiming")
    if job is None:
        return
    spec = job_spec(job.kind)
    heartbeat = _Heartbeat(job)
    heartbeat.start()
    reporter = JobReporter(job)
    try:
        # Called again after a connection error that escaped it: it resumes from its last finished
        # row (module docstring).
        result = retry_transient(lambda: spec.function(job, reporter), what=f"job {job.pk} ({job.kind})")
    except JobLost:
        logger.warning("job %s: attempt %s was taken over by another worker; stopping", job.pk, job.attempts)
    except JobCancelled:
        _end_attempt(job, JobStatus.CANCELLED)
    except Exception as exc:
        logger.exception("job %s failed", job)
        error = f"{type(exc).__name__}: {exc}"
        if is_transient(exc):
            backoff = job_backoff()
            error = (
                f"The database or the broker stayed unreachable through {backoff.retries} retries "
                f"over {backoff.total():.0f} s ({error}); start the job again to resume it."
            )
        log = (job.log + "\n" + traceback.format_exc())[-100_000:]
        if retry_transient(lambda: compare_and_set(owned_by_attempt(job), log=log), what=f"job {job.pk}"):
            _end_attempt(job, JobStatus.FAILED, error=error)
    else:
        status, error, message = ended(result)
        _end_attempt(job, status, result=result, error=error, message=message)
    finally:
        heartbeat.stopped.set()
        heartbeat.join(timeout=5)


def _end_attempt(
    job: Job, status: str, *, result: JobResult = None, error: str = "", message: str = ""
) -> None:
    # Still unreachable after every retry: the job stays running with no heartbeat, and the reaper
    # queues it again once the database is back (the next attempt resumes it).
    retry_transient(
        lambda: _finish_attempt(job, status, result=result, error=error, message=message),
        what=f"job {job.pk}: finishing",
    )


def reap_stale_jobs() -> list[int]:
    """Re-queue or fail running jobs whose worker stopped sending heartbeats; return their ids."""
    reaped: list[int] = []
    candidates = Job.objects.filter(status=JobStatus.RUNNING).only(
        "pk", "status", "heartbeat_at", "started_at", "created_at"
    )
    for candidate in candidates:
        if not candidate.is_stale():
            continue
        with transaction.atomic():
            job = Job.objects.select_for_update().get(pk=candidate.pk)
            if not job.is_stale():
                continue
            reaped.append(job.pk)
            if job.attempts < settings.JOB_MAX_ATTEMPTS and not job.cancel_requested:
                job.status, job.enqueued_at, job.sends = JobStatus.QUEUED, None, 0
                job.message = f"The worker stopped during attempt {job.attempts}; queued again"
                job.save(update_fields=["status", "message", "enqueued_at", "sends"])
                transaction.on_commit(lambda job=job: enqueue(job))  # type: ignore[misc]
            else:
                _finish(
                    job,
                    JobStatus.FAILED,
                    error=(
                        f"The worker running this job stopped responding (attempt {job.attempts} of "
                        f"{settings.JOB_MAX_ATTEMPTS}); no result was recorded."
                    ),
                    message="Worker lost",
                )
    resend_unsent_jobs()
    return reaped


@job_task("diagnostic_sleep", title="Diagnostic: sleep with progress")
def diagnostic_sleep(job: Job, reporter: JobReporter) -> JobResult:
    """Sleep in small steps reporting progress; used to check workers and the job machinery."""
    steps = int(job.parameters.get("steps", 10))
    delay = float(job.parameters.get("delay_s", 0.2))
    for step in range(steps):
        time.sleep(delay)
        # Each step is recorded with the attempt that ran it, so a test can see two attempts never
        # interleave their work.
        reporter.metric(step + 1, attempt=job.attempts)
        reporter.progress((step + 1) / steps, f"Step {step + 1} of {steps}", force=True)
    return {"steps": steps}
