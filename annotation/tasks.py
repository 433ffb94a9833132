"""Job functions of the annotation app (run by the Celery worker through webapp.jobs)."""

from __future__ import annotations

import threading
from typing import BinaryIO, cast

from django.core.files.storage import default_storage
from django.db import connection

from annotation.demo import recording as demo
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.labelling import drafts
from annotation.recording import items, takes
from webapp.jobs import JobReporter, JobResult, job_task
from webapp.lib.row_outcome import RESULT_KEY, RowTally
from webapp.models import Job


@job_task(demo.RESYNTHESIS_JOB, title="Re-synthesise the demo speech")
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


@job_task(items.IMPORT_JOB_KIND, title="Import items")
def import_items(job: Job, reporter: JobReporter) -> JobResult:
    """Import a stored item file; progress is the share of the file read. A refused file fails the job
    with its problems in the log (the first 200) and nothing written."""
    key = str(job.parameters["key"])
    size = max(1, default_storage.size(key))
    reporter.progress(0.0, "Reading the file", force=True)
    with default_storage.open(key, "rb") as handle, _ProgressWriter(job.pk) as progress:
        stream = cast(BinaryIO, handle)
        report = items.import_items(
            stream,
            str(job.parameters.get("name") or key),
            import_valid_rows=bool(job.parameters.get("import_valid_rows")),
            on_progress=lambda rows: progress.set(0.95 * handle.tell() / size, f"{rows:,} rows checked"),
        )
    default_storage.delete(key)
    if not report.imported:
        for error in report.errors[:200]:
            reporter.log(str(error))
        raise ValueError(
            f"Nothing was imported: {report.invalid_rows} of {report.rows_read} rows have problems."
            if report.invalid_rows
            else f"Nothing was imported: {report.errors[0] if report.errors else 'the file holds no items'}"
        )
    for error in report.errors[:200]:
        reporter.log(str(error))  # the rows skipped on request: each one's problem
    # Rows skipped because they have problems are the import's failed rows (`row_outcome`).
    tally = RowTally(report.rows_read, min(report.invalid_rows, report.rows_read))
    return {**report.as_result(), RESULT_KEY: tally.as_result()}


class _ProgressWriter(threading.Thread):
    """Writes a job's progress from its own thread (its own connection): the import's transaction
    would hide progress written through the job's connection until the very end."""

    def __init__(self, job_id: int) -> None:
        super().__init__(daemon=True, name=f"job-{job_id}-progress")
        self.job_id, self.latest, self.stopped = job_id, (0.0, ""), threading.Event()

    def set(self, fraction: float, message: str) -> None:
        self.latest = (fraction, message)

    def run(self) -> None:
        written = self.latest
        try:
            while not self.stopped.wait(0.5):
                if self.latest != written:
                    written = self.latest
                    Job.objects.filter(pk=self.job_id).update(progress=written[0], message=written[1])
        finally:
            connection.close()

    def __enter__(self) -> _ProgressWriter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.join()
