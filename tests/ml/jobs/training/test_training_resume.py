"""A training job whose worker died part-way resumes, in its next attempt, from its last saved state."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
from django.utils import timezone

from ml.core.loop import CancelCheck, ProgressCallback, ResumeSpec, TrainingResult, run_steps
from ml.core.resume import training_state
from ml.jobs.models import Checkpoint, DatasetSnapshot
from ml.jobs.training.register import (
    TrainingPlan,
    remove_finished_states,
    train_and_register,
    training_resume,
)
from tests.ml.jobs.training.test_train_and_register import _save_fake_checkpoint, _sft_job
from webapp.jobs import JobCancelled, JobReporter, _claim, reap_stale_jobs
from webapp.models import Job, JobStatus

STEPS = 8


class WorkerDied(BaseException):
    """Stands for the worker process being killed: nothing in the job may catch it."""


@pytest.fixture
def every_four_steps(settings: Any) -> None:
    settings.TRAINING_RESUME_EVERY_STEPS = 4


def tiny_run(resume: ResumeSpec | None, weights: list[torch.Tensor], die_at: int | None = None) -> Any:
    """Return a training function: a small linear model trained STEPS steps, dying before step ``die_at``."""

    def train(on_progress: ProgressCallback, should_cancel: CancelCheck) -> TrainingResult:
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
        inputs = torch.randn(4, 3)

        def take_step(step: int, taken: list[int]) -> dict[str, float]:
            if step + 1 == die_at:
                raise WorkerDied()
            optimizer.zero_grad()
            loss = model(inputs[taken]).pow(2).mean()
            loss.backward()
            optimizer.step()
            return {"loss": float(loss.detach())}

        class Length:
            epochs, max_steps, seed = 1, STEPS, 0

        state = training_state(resume, model, optimizer)
        result = run_steps(4, 2, Length(), take_step, on_progress, should_cancel, state)
        weights.append(model.weight.detach().clone())
        return result

    return train


def attempt(job: Job, weights: list[torch.Tensor], die_at: int | None = None) -> dict[str, Any]:
    """Run one attempt of the job's training; return its job result."""

    def prepare(job: Job, reporter: JobReporter, snapshot: DatasetSnapshot) -> TrainingPlan:
        return TrainingPlan(
            kind=Checkpoint.Kind.SFT,
            train=tiny_run(training_resume(job), weights, die_at),
            save=_save_fake_checkpoint,
        )

    return train_and_register(job, JobReporter(job), prepare).as_job_result()


def claimed_again_after_its_worker_died(job: Job) -> Job:
    """Return the job as the attempt that follows a dead worker claims it."""
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert reap_stale_jobs() == [job.pk]
    claimed = _claim(job.pk)
    assert claimed is not None
    return claimed


def test_the_next_attempt_resumes_and_ends_as_an_uninterrupted_run(
    db: None, ml_storage: Path, every_four_steps: None
) -> None:
    # given a training job whose worker died during step 6 (state saved after step 4)
    uninterrupted: list[torch.Tensor] = []
    tiny_run(None, uninterrupted)(lambda *report: None, lambda: False)
    first = _claim(_sft_job().pk)
    assert first is not None
    with pytest.raises(WorkerDied):
        attempt(first, [], die_at=6)
    assert training_resume(first).saved_step()

    # when the job's next attempt runs
    second = claimed_again_after_its_worker_died(first)
    weights: list[torch.Tensor] = []
    result = attempt(second, weights)

    # then it continued from step 4 to the uninterrupted run's weights, each step charted once,
    # and its resumable state is gone
    torch.testing.assert_close(weights[-1], uninterrupted[-1])
    second.refresh_from_db()
    assert [point["step"] for point in second.metrics] == list(range(1, STEPS + 1))
    assert "Resuming from the training state an earlier attempt saved" in second.log
    assert result["metrics"]["steps"] == STEPS
    assert not training_resume(second).directory.exists()


def test_a_cancelled_job_leaves_no_state_to_resume(
    db: None, ml_storage: Path, every_four_steps: None
) -> None:
    # given a job whose run has saved its state after step 4
    job = _claim(_sft_job().pk)
    assert job is not None
    saved_when_cancelled: list[bool] = []

    def prepare(job: Job, reporter: JobReporter, snapshot: DatasetSnapshot) -> TrainingPlan:
        train = tiny_run(training_resume(job), [])

        def cancelled_at_step_six(
            on_progress: ProgressCallback, should_cancel: CancelCheck
        ) -> TrainingResult:
            def reporting(fraction: float, message: str, metrics: dict[str, float]) -> None:
                if metrics["step"] == 6:
                    saved_when_cancelled.append(training_resume(job).saved_step())
                    Job.objects.filter(pk=job.pk).update(cancel_requested=True)
                on_progress(fraction, message, metrics)

            return train(reporting, should_cancel)

        return TrainingPlan(kind=Checkpoint.Kind.SFT, train=cancelled_at_step_six, save=_save_fake_checkpoint)

    # when an admin cancels it at step 6
    with pytest.raises(JobCancelled):
        train_and_register(job, JobReporter(job), prepare)

    # then the state is removed with the job's end
    assert saved_when_cancelled == [True]
    assert not training_resume(job).directory.exists()


def test_the_states_of_ended_jobs_are_removed_when_a_training_job_starts(db: None, ml_storage: Path) -> None:
    # given the state a job left when an outage failed it, and that of a job still running
    failed, running = _sft_job(), _sft_job()
    Job.objects.filter(pk=failed.pk).update(status=JobStatus.FAILED)
    Job.objects.filter(pk=running.pk).update(status=JobStatus.RUNNING)
    for job in (failed, running):
        training_resume(job).directory.mkdir(parents=True)

    # when a training job starts
    remove_finished_states()

    # then only the running job's state is left
    assert not training_resume(failed).directory.exists()
    assert training_resume(running).directory.exists()
