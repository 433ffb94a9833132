"""Job functions of the evaluation app (run by the Celery worker through webapp.jobs)."""

from __future__ import annotations

from evaluation.judging.runs import run_judge_run
from webapp.jobs import JobReporter, JobResult, job_task
from webapp.models import Job


@job_task("judge_run", queue="default", title="Judge a system's outputs")
def judge_run(job: Job, reporter: JobReporter) -> JobResult:
    """Judge every stage of a system's outputs not yet judged by the run's judge configuration."""
    return run_judge_run(int(job.parameters["judge_run_id"]), reporter)
