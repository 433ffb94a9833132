"""A job over many rows ends in the one status vocabulary, and its pages show the count and the share."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from django.urls import reverse

from webapp.jobs import JobReporter, job_task, run_job
from webapp.lib.row_outcome import RowTally
from webapp.models import Job, JobStatus


@job_task("test_rows")
def _rows(job: Job, reporter: JobReporter) -> dict[str, object]:
    tally = RowTally(int(job.parameters["rows"]), int(job.parameters["failed"]), "items")
    return {"rows": tally.as_result(), "row_errors": ["EE-3: could not be voiced"]}


def _ended(rows: int, failed: int) -> Job:
    job = Job.objects.create(kind="test_rows", parameters={"rows": rows, "failed": failed})
    run_job(job.pk)
    job.refresh_from_db()
    return job


def test_a_job_with_failed_rows_finishes_with_errors_and_keeps_its_result(
    client_for: Callable[[str], Client],
) -> None:
    # given a job over four rows, one of which failed
    job = _ended(4, 1)

    # then it finished with errors, its result and its counts kept, its progress full
    assert job.status == JobStatus.FINISHED_WITH_ERRORS and job.is_finished
    assert (job.error, job.progress) == ("", 1.0)
    assert job.message == "Finished with errors: 1 of 4 items failed (25%)"
    assert job.result is not None and job.result["row_errors"] == ["EE-3: could not be voiced"]
    # and the jobs list and the job's page say so, with the count and the share
    admin = client_for("admin")
    listed = admin.get(reverse("job_list")).content.decode()
    assert "Finished with errors <span" in listed and "· 1 of 4 items failed (25%)" in listed
    page = admin.get(reverse("job_detail", args=[job.pk])).content.decode()
    assert 'data-status="finished_with_errors"' in page
    assert "Finished with errors: 1 of 4 items failed (25%)" in page
    assert "EE-3: could not be voiced" in page


def test_a_job_whose_rows_mostly_failed_is_failed_with_the_figures_as_its_error(db: None) -> None:
    job = _ended(4, 3)
    assert job.status == JobStatus.FAILED
    assert job.error == "Failed: 3 of 4 items failed (75%), more than 50%"
    assert job.result is not None and job.result["rows"]["failed"] == 3


def test_a_job_whose_rows_all_succeeded_succeeded(db: None) -> None:
    job = _ended(4, 0)
    assert (job.status, job.message) == (JobStatus.SUCCEEDED, "Succeeded: all 4 items done")
