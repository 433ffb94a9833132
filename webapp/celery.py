"""The Celery app: queues `default` (audio, judging, exports) and `gpu` (inference, training), and
any the EchoDialogue builder's stages are routed to (`settings.JOB_QUEUES`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import worker_ready
from django.conf import settings
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("echostudio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = tuple(Queue(name) for name in settings.JOB_QUEUES)
app.autodiscover_tasks(["webapp", "annotation", "evaluation", "ml"])


def _ensure_broker_folders() -> None:
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder"):
        if key in options:
            Path(options[key]).mkdir(parents=True, exist_ok=True)


_ensure_broker_folders()


@app.task(name="webapp.run_job", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_job_task(job_id: int) -> None:
    """Run the job with this id (see webapp.jobs.run_job)."""
    from webapp.jobs import run_job

    run_job(job_id)


@app.task(name="webapp.reap_stale_jobs", ignore_result=True)
def reap_stale_jobs_task() -> list[int]:
    """Re-queue or fail jobs whose worker stopped sending heartbeats (run by Celery beat)."""
    from webapp.jobs import reap_stale_jobs

    return reap_stale_jobs()


@app.task(name="webapp.purge_idempotency_keys", ignore_result=True)
def purge_idempotency_keys_task() -> int:
    """Forget API idempotency keys older than IDEMPOTENCY_KEY_HOURS (run by Celery beat)."""
    from webapp.idempotency import purge_expired_keys

    return purge_expired_keys()


@app.task(name="webapp.backup_snapshot", ignore_result=True)
def backup_snapshot_task() -> str:
    """Write a scheduled snapshot and keep the newest BACKUP_KEEP (run by beat when BACKUP_TARGET is set)."""
    from webapp.backup import scheduled_backup

    return scheduled_backup()


@worker_ready.connect
def _reap_on_start(**_: Any) -> None:
    # A worker that starts after a crash picks up the pieces of jobs its predecessor left running.
    from webapp.jobs import reap_stale_jobs

    reap_stale_jobs()
