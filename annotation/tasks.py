"""Job functions of the annotation app (run by the Celery worker through webapp.jobs)."""

from __future__ import annotations

from annotation import demo
from webapp.jobs import JobReporter, JobResult, job_task
from webapp.models import Job


@job_task("resynthesize_demo_audio", title="Re-synthesise the demo speech")
def resynthesize_demo_audio(job: Job, reporter: JobReporter) -> JobResult:
    """Synthesise every demo take again with eSpeak NG (real work with visible progress)."""
    reporter.progress(0.0, "Starting eSpeak NG", force=True)
    count = demo.resynthesize_demo_audio(lambda fraction, message: reporter.progress(fraction, message))
    return {"takes": count}
