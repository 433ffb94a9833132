"""Job functions that belong to the project as a whole."""

from __future__ import annotations

import time

from webapp.jobs import JobReporter, JobResult, job_task
from webapp.models import Job


@job_task("diagnostic_sleep", title="Diagnostic: sleep with progress")
def diagnostic_sleep(job: Job, reporter: JobReporter) -> JobResult:
    """Sleep in small steps reporting progress; used to check workers and the job machinery."""
    steps = int(job.parameters.get("steps", 10))
    delay = float(job.parameters.get("delay_s", 0.2))
    for step in range(steps):
        time.sleep(delay)
        reporter.progress((step + 1) / steps, f"Step {step + 1} of {steps}", force=True)
    return {"steps": steps}
