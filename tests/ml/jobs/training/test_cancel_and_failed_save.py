"""A training job never claims success without its checkpoint: cancelled or failing runs leave none."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from django.db import connection

from ml.jobs.checkpoint_registry import ensure_tiny_base
from ml.jobs.launch import SFT_JOB, start_ml_job
from ml.jobs.models import Checkpoint
from tests.conftest import wait_until
from tests.ml.jobs.support import TrainingItemFactory, finished, tiny_sft_parameters
from webapp.jobs import cancel_job, run_job
from webapp.models import Job, JobStatus, User


def _run_in_thread(job_id: int) -> None:
    try:
        run_job(job_id)
    finally:
        connection.close()


def test_cancelling_mid_training_ends_cancelled_without_a_checkpoint(
    transactional_db: None, ml_storage: Path, make_user: Callable[..., User]
) -> None:
    # given an SFT job that would train for many steps, running on a worker thread
    actor = make_user(None, "actor-c")
    TrainingItemFactory.create(external_id="TR-0", recording__actor=actor)
    job = start_ml_job(
        SFT_JOB, started_by=None, parameters=tiny_sft_parameters(max_steps=400), splits=["train"]
    )
    worker = threading.Thread(target=_run_in_thread, args=(job.pk,))
    worker.start()

    # when an admin cancels once training has reported a step
    wait_until(lambda: bool(Job.objects.get(pk=job.pk).metrics), 120, "training never reported a step")
    cancel_job(job)
    worker.join(timeout=120)

    # then the job is cancelled part way, and no checkpoint was recorded or written
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert 1 <= len(job.metrics) < 400
    assert not Checkpoint.objects.filter(produced_by=job).exists()
    assert not (ml_storage / "sft").exists()


def test_a_checkpoint_that_cannot_be_written_fails_the_job(
    db: None, ml_storage: Path, make_user: Callable[..., User]
) -> None:
    # given the tiny base model in place, and a file where the SFT checkpoints' folder should be
    ensure_tiny_base()
    (ml_storage / "sft").write_text("not a folder")
    TrainingItemFactory.create(external_id="TR-0", recording__actor=make_user(None, "actor-f"))

    # when an SFT job trains and then tries to save
    job = finished(start_ml_job(SFT_JOB, started_by=None, parameters=tiny_sft_parameters(), splits=["train"]))

    # then it failed after training, with no checkpoint row
    assert job.status == JobStatus.FAILED
    assert job.error.startswith(("NotADirectoryError", "FileExistsError")), job.error
    assert len(job.metrics) == 2
    assert job.result is None
    assert not Checkpoint.objects.filter(produced_by=job).exists()


def test_a_rerun_after_the_checkpoint_was_recorded_does_not_train_again(
    db: None, ml_storage: Path, make_user: Callable[..., User]
) -> None:
    # given an SFT job whose first attempt recorded its checkpoint, then lost its worker
    TrainingItemFactory.create(external_id="TR-0", recording__actor=make_user(None, "actor-r"))
    job = finished(start_ml_job(SFT_JOB, started_by=None, parameters=tiny_sft_parameters(), splits=["train"]))
    checkpoint = Checkpoint.objects.get(produced_by=job)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED, metrics=[], result=None)

    # when the job runs again
    again = finished(job)

    # then it reports the recorded checkpoint without training or saving another
    assert again.status == JobStatus.SUCCEEDED
    assert again.result is not None
    assert (again.result["checkpoint"], again.result["resumed"]) == (checkpoint.pk, True)
    assert again.metrics == []
    assert Checkpoint.objects.filter(produced_by=job).count() == 1
    assert again.attempts == 2
