"""Every training job ends the same way: trained, saved, verified and registered, or nothing recorded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from ml.core.checkpoints import METADATA_FILE, CheckpointMetadata, SavedCheckpoint, weight_checksums
from ml.core.loop import CancelCheck, ProgressCallback, TrainingResult
from ml.jobs.checkpoint_registry import store_checkpoint
from ml.jobs.launch import SFT_JOB
from ml.jobs.models import Checkpoint, DatasetSnapshot
from ml.jobs.training.register import Prepare, TrainedCheckpoint, TrainingPlan, train_and_register
from tests.webapp.jobs.test_job_ownership import stalled_and_reclaimed
from webapp.jobs import JobCancelled, JobLost, JobReporter
from webapp.models import Job


def _save_fake_checkpoint(destination: str, metrics: Mapping[str, float]) -> SavedCheckpoint:
    folder = Path(destination)
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    metadata = CheckpointMetadata(
        arch="fake",
        created_at="2025-01-01T00:00:00+00:00",
        config={},
        dataset_snapshot_ids=[],
        metrics=dict(metrics),
        weight_sha256=weight_checksums(folder),
    )
    (folder / METADATA_FILE).write_text(metadata.to_json())
    return SavedCheckpoint(local_path=folder, uri=destination, metadata=metadata)


def _two_step_run(on_progress: ProgressCallback, should_cancel: CancelCheck) -> TrainingResult:
    result = TrainingResult(total_steps=2)
    for step in (1, 2):
        metrics = {"step": float(step), "loss": 1.0 / step}
        result.history.append(metrics)
        result.steps_completed = step
        on_progress(step / 2, f"step {step}/2", dict(metrics))
    return result


def _cancelled_run(on_progress: ProgressCallback, should_cancel: CancelCheck) -> TrainingResult:
    return TrainingResult(total_steps=2, cancelled=True)


def _sft_job() -> Job:
    snapshot = DatasetSnapshot.objects.create(purpose=DatasetSnapshot.Purpose.SFT, content_hash="0" * 64)
    job = Job.objects.create(
        kind=SFT_JOB, parameters={"dataset_snapshot": snapshot.pk, "checkpoint_name": ""}
    )
    snapshot.job = job
    snapshot.save(update_fields=["job"])
    return job


def _plan(train: Callable[[ProgressCallback, CancelCheck], TrainingResult]) -> Prepare:
    def prepare(job: Job, reporter: JobReporter, snapshot: DatasetSnapshot) -> TrainingPlan:
        return TrainingPlan(kind=Checkpoint.Kind.SFT, train=train, save=_save_fake_checkpoint)

    return prepare


def test_a_run_is_saved_verified_and_registered_with_its_final_metrics(db: None, ml_storage: Path) -> None:
    # given an SFT job and a plan that trains two steps
    job = _sft_job()

    # when it is trained and registered
    trained = train_and_register(job, JobReporter(job), _plan(_two_step_run))

    # then the checkpoint row points at the saved folder, made from the job's snapshot
    checkpoint = Checkpoint.objects.get(produced_by=job)
    assert trained == TrainedCheckpoint(checkpoint, {"steps": 2, "step": 2.0, "loss": 0.5})
    assert (checkpoint.name, checkpoint.kind, checkpoint.dataset_snapshot) == (
        f"sft-job{job.pk}",
        Checkpoint.Kind.SFT,
        DatasetSnapshot.objects.get(job=job),
    )
    assert (Path(checkpoint.uri) / METADATA_FILE).is_file()
    job.refresh_from_db()
    assert [point["step"] for point in job.metrics] == [1, 2]
    assert f"Checkpoint sft-job{job.pk} saved and verified" in job.log
    assert trained.as_job_result() == {
        "checkpoint": checkpoint.pk,
        "checkpoint_name": checkpoint.name,
        "uri": checkpoint.uri,
        "metrics": {"steps": 2, "step": 2.0, "loss": 0.5},
    }


def test_a_cancelled_run_records_no_checkpoint(db: None, ml_storage: Path) -> None:
    job = _sft_job()

    with pytest.raises(JobCancelled):
        train_and_register(job, JobReporter(job), _plan(_cancelled_run))

    assert not Checkpoint.objects.filter(produced_by=job).exists()
    assert not (ml_storage / "sft").exists()


def test_a_job_that_already_recorded_a_checkpoint_returns_it_without_preparing(db: None) -> None:
    job = _sft_job()
    recorded = Checkpoint.objects.create(
        name="sft-1", kind=Checkpoint.Kind.SFT, uri="/m/sft-1", produced_by=job
    )

    def prepare(job: Job, reporter: JobReporter, snapshot: DatasetSnapshot) -> TrainingPlan:
        raise AssertionError("a resumed job must not prepare another run")

    trained = train_and_register(job, JobReporter(job), prepare)

    assert trained == TrainedCheckpoint(recorded, resumed=True)
    assert trained.as_job_result() == {
        "checkpoint": recorded.pk,
        "checkpoint_name": "sft-1",
        "uri": "/m/sft-1",
        "resumed": True,
    }


def test_an_attempt_finishing_after_another_recorded_keeps_the_first_checkpoint(
    db: None, ml_storage: Path
) -> None:
    # given a job whose first attempt recorded its checkpoint while the second was still saving
    job = _sft_job()
    first = Checkpoint.objects.create(name="first", kind=Checkpoint.Kind.SFT, uri="/m/first", produced_by=job)
    Job.objects.filter(pk=job.pk).update(attempts=2)
    job.refresh_from_db()

    # when the second attempt stores its own
    stored = store_checkpoint(
        job,
        Checkpoint.Kind.SFT,
        "second",
        lambda destination: _save_fake_checkpoint(destination, {}),
        snapshot=None,
        parent=None,
    )

    # then the first stays the job's only checkpoint, and the second copy is removed
    assert stored == first
    assert list(Checkpoint.objects.filter(produced_by=job)) == [first]
    assert not (ml_storage / "sft" / f"job-{job.pk}-attempt-2").exists()


def test_an_attempt_that_lost_the_job_records_no_checkpoint(db: None, ml_storage: Path) -> None:
    # given an attempt that stalled, was reaped, and whose job another worker claimed
    stalled, _ = stalled_and_reclaimed()

    # when the stalled attempt finishes saving
    with pytest.raises(JobLost):
        store_checkpoint(
            stalled,
            Checkpoint.Kind.SFT,
            "late",
            lambda destination: _save_fake_checkpoint(destination, {}),
            snapshot=None,
            parent=None,
        )

    # then nothing is recorded and its copy is removed
    assert not Checkpoint.objects.filter(produced_by=stalled).exists()
    assert not (ml_storage / "sft" / f"job-{stalled.pk}-attempt-1").exists()
