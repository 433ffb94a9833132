"""Job functions of the annotation app (run by the Celery worker through webapp.jobs)."""

from __future__ import annotations

from annotation.demo import recording as demo
from annotation.gold import transfer_jobs
from annotation.labelling import drafts
from annotation.recording import takes
from webapp.jobs import JobReporter, JobResult, job_task
from webapp.models import Job


@job_task("resynthesize_demo_audio", title="Re-synthesise the demo speech")
def resynthesize_demo_audio(job: Job, reporter: JobReporter) -> JobResult:
    """Synthesise every demo take again with eSpeak NG (real work with visible progress)."""
    reporter.progress(0.0, "Starting eSpeak NG", force=True)
    count = demo.resynthesize_demo_audio(lambda fraction, message: reporter.progress(fraction, message))
    return {"takes": count}


@job_task(drafts.JOB_KIND, title="Draft Theory-of-Mind labels with an LLM")
def draft_tom(job: Job, reporter: JobReporter) -> JobResult:
    """Ask the configured chat endpoint for ToM drafts of the job's items (see annotation.labelling.drafts)."""
    return drafts.run_draft_job(job, reporter)


@job_task(takes.ANALYSIS_JOB_KIND, title="Analyse a take and send it to review")
def analyze_take(job: Job, reporter: JobReporter) -> JobResult:
    """QC metrics and acoustic features of one uploaded take, then three reviewers (see annotation.recording.takes)."""
    return takes.analyze_take(int(job.parameters["take"]), reporter)


@job_task(transfer_jobs.EXPORT_KIND, title="Export gold references (JSONL + parquet)")
def export_gold(job: Job, reporter: JobReporter) -> JobResult:
    """Write the gold references with items and audio into a downloadable archive."""
    return transfer_jobs.run_export(job, reporter)


@job_task(transfer_jobs.IMPORT_KIND, title="Import gold references")
def import_gold(job: Job, reporter: JobReporter) -> JobResult:
    """Import an uploaded gold export, all or nothing."""
    return transfer_jobs.run_import(job, reporter)
