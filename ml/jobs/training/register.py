"""How every training job runs: train, then save, verify and register the checkpoint, then report.

The three training jobs of ``ml.jobs.training.jobs`` (SFT + AAA, RL + SDCA, reward model) differ only in
how they prepare their data and model, which each writes as a ``prepare`` function returning a
``TrainingPlan``. ``train_and_register`` does the rest the same way for all three:

- a job re-run after its worker died (``webapp.jobs`` re-queues it once) first looks for the
  checkpoint an earlier attempt recorded, and returns that instead of training again;
- otherwise the loop saves a resumable state every ``TRAINING_RESUME_EVERY_STEPS`` steps into the
  job's own folder (``training_resume``), and a later attempt continues from its last saved step
  (``ml.core.resume``); metric points for steps an earlier attempt already wrote are not written
  again; the state is removed once the job ends (succeeded, cancelled, or failed); after a
  database outage it is kept for ``run_job``'s next call of the job, and removed by the next
  training job if the outage failed it;
- progress and per-step metrics (loss, rho, rewards, advantages) go to the job row, thinned to
  about ``MAX_METRIC_POINTS`` points; a cancel is polled before every step;
- the checkpoint is saved, read back, verified and recorded (``ml.jobs.checkpoint_registry``)
  before the job returns: a cancelled or failed run leaves no checkpoint, and a succeeded job
  always names one. The last cancel check is just before saving; nothing after it can turn a
  recorded checkpoint into a cancelled job.

Every training job returns a ``TrainedCheckpoint`` (as the job's result dict).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from ml.core.loop import CancelCheck, ProgressCallback, ResumeSpec, TrainingResult
from ml.jobs.checkpoint_registry import checkpoint_root, default_checkpoint_name, store_checkpoint
from ml.jobs.models import Checkpoint, DatasetSnapshot
from webapp.db import is_transient
from webapp.jobs import JobCancelled, JobLost, JobReporter
from webapp.models import FINISHED_STATUSES, Job

if TYPE_CHECKING:
    # Only for types: ml.core.checkpoints loads torch, and the result type is all this module needs.
    from ml.core.checkpoints import SavedCheckpoint

# Charts stay readable and the job row small: at most about this many points per run.
MAX_METRIC_POINTS = 500


@dataclass(frozen=True)
class TrainingPlan:
    """What one training job runs, prepared from its parameters and dataset snapshot."""

    kind: str
    # (progress callback, cancel check) -> the training loop's result; the model is trained in place.
    train: Callable[[ProgressCallback, CancelCheck], TrainingResult]
    # (destination, final metrics) -> the checkpoint written there.
    save: Callable[[str, dict[str, float]], SavedCheckpoint]
    parent: Checkpoint | None = None
    # The share of the job's progress bar the training loop fills.
    progress_span: tuple[float, float] = (0.05, 0.9)
    # Metrics measured after training (e.g. the reward model's fit), added to the final metrics.
    measure: Callable[[], dict[str, float]] | None = None
    # What the progress message and the log call the saved model.
    noun: str = "checkpoint"


@dataclass(frozen=True)
class TrainedCheckpoint:
    """The result of every training job: the checkpoint it recorded and the run's final metrics."""

    checkpoint: Checkpoint
    metrics: dict[str, float] | None = None
    resumed: bool = False

    def as_job_result(self) -> dict[str, Any]:
        """Return the JSON stored as the job's result (the job page links the checkpoint by its id)."""
        result: dict[str, Any] = {
            "checkpoint": self.checkpoint.pk,
            "checkpoint_name": self.checkpoint.name,
            "uri": self.checkpoint.uri,
        }
        if self.resumed:
            result["resumed"] = True
        if self.metrics is not None:
            result["metrics"] = self.metrics
        return result


Prepare = Callable[[Job, JobReporter, DatasetSnapshot], TrainingPlan]


def finite_metrics(values: Mapping[str, float]) -> dict[str, float]:
    """Return the metrics that are finite numbers (JSON, and PostgreSQL's jsonb, have no NaN)."""
    return {
        name: float(value)
        for name, value in values.items()
        if isinstance(value, int | float) and math.isfinite(value)
    }


def training_resume(job: Job) -> ResumeSpec:
    """Return where the job's training loop keeps its resumable state: one folder per job, shared
    by its attempts, under the checkpoint folder (under VAR_DIR when that is an s3:// prefix: the
    state is then local to the worker, and only an attempt on the same machine resumes)."""
    return ResumeSpec(_resume_root() / f"job-{job.pk}", settings.TRAINING_RESUME_EVERY_STEPS)


def _resume_root() -> Path:
    root = checkpoint_root()
    return Path(settings.VAR_DIR) / "training-resume" if root.startswith("s3://") else Path(root) / "resume"


def remove_finished_states() -> None:
    """Remove the resumable states of jobs that have ended: one that failed on an outage keeps its
    state (``train_and_register``) until the next training job starts on this machine."""
    folders = {folder.name: folder for folder in _resume_root().glob("job-*")}
    ids = [int(name.removeprefix("job-")) for name in folders if name.removeprefix("job-").isdigit()]
    for pk in Job.objects.filter(pk__in=ids, status__in=FINISHED_STATUSES).values_list("pk", flat=True):
        ResumeSpec(folders[f"job-{pk}"]).clear()


def last_recorded_step(job: Job) -> int:
    """Return the highest step of the job's metric points (0 before any)."""
    return max((int(point.get("step", 0)) for point in job.metrics or []), default=0)


def training_progress(reporter: JobReporter, start: float, end: float) -> ProgressCallback:
    """Return a training loop's progress callback: progress in [start, end] and thinned metrics.

    Steps up to the last one an earlier attempt recorded get no second metric point: a resumed
    run re-runs the steps after its last saved state, which that attempt may have reported.
    """
    recorded = last_recorded_step(reporter.job)

    def on_progress(fraction: float, message: str, metrics: dict[str, float]) -> None:
        step = int(metrics.get("step", 0))
        total = max(1, round(step / fraction)) if fraction > 0 else 1
        every = max(1, total // MAX_METRIC_POINTS)
        if step > recorded and (step % every == 0 or step >= total):
            reporter.metric(step, **finite_metrics({k: v for k, v in metrics.items() if k != "step"}))
        # progress() raises JobCancelled when an admin asked to stop: the run ends without a checkpoint.
        reporter.progress(start + (end - start) * fraction, message)

    return on_progress


def job_snapshot(job: Job) -> DatasetSnapshot:
    """Return the dataset snapshot the job was started with."""
    return DatasetSnapshot.objects.get(pk=int(job.parameters["dataset_snapshot"]))


def stop_if_cancelled(cancelled: bool, reporter: JobReporter) -> None:
    """Raise JobCancelled when the loop stopped early or an admin asked to stop."""
    if cancelled or reporter.should_cancel():
        raise JobCancelled()


def train_and_register(job: Job, reporter: JobReporter, prepare: Prepare) -> TrainedCheckpoint:
    """Run a training job to its recorded checkpoint (module docstring); raise JobCancelled on cancel."""
    recorded = Checkpoint.objects.filter(produced_by=job).first()
    remove_finished_states()
    resume = training_resume(job)
    if recorded is not None:
        resume.clear()
        return TrainedCheckpoint(recorded, resumed=True)
    try:
        trained = _train_and_store(job, reporter, prepare, resume)
    except JobLost:
        # The attempt that took the job over resumes from the state.
        raise
    except Exception as exc:
        # Cancelled or failed for good: nothing will resume. A connection error makes run_job call
        # the job again, which resumes.
        if isinstance(exc, JobCancelled) or not is_transient(exc):
            resume.clear()
        raise
    resume.clear()
    return trained


def _train_and_store(
    job: Job, reporter: JobReporter, prepare: Prepare, resume: ResumeSpec
) -> TrainedCheckpoint:
    snapshot = job_snapshot(job)
    reporter.progress(0.0, "Reading the dataset snapshot", force=True)
    plan = prepare(job, reporter, snapshot)
    if resume.saved_step():
        reporter.log(f"Resuming from the training state an earlier attempt saved in {resume.directory}")
    result = plan.train(training_progress(reporter, *plan.progress_span), reporter.should_cancel)
    stop_if_cancelled(result.cancelled, reporter)
    metrics: dict[str, float] = {"steps": result.steps_completed, **finite_metrics(result.last_metrics())}
    if plan.measure is not None:
        metrics.update(finite_metrics(plan.measure()))
    reporter.progress(0.92, f"Saving the {plan.noun}", force=True)
    checkpoint = store_checkpoint(
        job,
        plan.kind,
        job.parameters.get("checkpoint_name") or default_checkpoint_name(job, plan.kind),
        lambda destination: plan.save(destination, metrics),
        snapshot=snapshot,
        parent=plan.parent,
    )
    reporter.log(f"{plan.noun.capitalize()} {checkpoint.name} saved and verified at {checkpoint.uri}")
    return TrainedCheckpoint(checkpoint, metrics)
