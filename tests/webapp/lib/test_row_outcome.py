"""The one status vocabulary of jobs over many rows (no database)."""

from __future__ import annotations

import pytest

from webapp.jobs import ended
from webapp.lib.row_outcome import (
    FAILED,
    FAILED_ERROR_SHARE,
    FINISHED_WITH_ERRORS,
    SUCCEEDED,
    RowTally,
    outcome,
    percent,
    tally_of,
)
from webapp.models import FINISHED_STATUSES, JobStatus


@pytest.mark.parametrize(
    ("rows", "failed", "status"),
    [
        (36, 0, SUCCEEDED),
        (0, 0, SUCCEEDED),  # nothing left to do
        (36, 1, FINISHED_WITH_ERRORS),  # one row in 36 is an error, and says so
        (36, 15, FINISHED_WITH_ERRORS),
        (36, 18, FINISHED_WITH_ERRORS),  # exactly the threshold: not beyond it
        (36, 19, FAILED),
        (36, 36, FAILED),  # nothing usable
        (1, 1, FAILED),
    ],
)
def test_the_status_follows_the_share_of_failed_rows(rows: int, failed: int, status: str) -> None:
    assert FAILED_ERROR_SHARE == 0.5
    assert outcome(rows, failed) == status


def test_an_impossible_tally_is_refused() -> None:
    with pytest.raises(ValueError, match="0 <= failed <= rows"):
        RowTally(3, 4)


def test_the_sentence_carries_the_count_and_the_share() -> None:
    assert RowTally(36, 0, "stages").sentence() == "Succeeded: all 36 stages done"
    assert RowTally(36, 15, "stages").sentence() == "Finished with errors: 15 of 36 stages failed (42%)"
    assert RowTally(36, 20).sentence() == "Failed: 20 of 36 rows failed (56%), more than 50%"
    assert RowTally(4, 4).sentence() == "Failed: nothing usable, 4 of 4 rows failed (100%)"


def test_a_jobs_result_carries_its_tally_and_its_status_follows() -> None:
    result = {"valid": 21, "rows": RowTally(36, 15, "stages").as_result()}
    assert tally_of(result) == RowTally(36, 15, "stages")
    assert ended(result) == (
        JobStatus.FINISHED_WITH_ERRORS,
        "",
        "Finished with errors: 15 of 36 stages failed (42%)",
    )
    failed = ended({"rows": RowTally(2, 2).as_result()})
    assert failed[0] == JobStatus.FAILED and failed[1] == failed[2]
    # a job that does not work row by row succeeds when it returns
    assert ended({"steps": 3}) == (JobStatus.SUCCEEDED, "", "") == ended(None)[:3]


def test_the_job_statuses_are_the_vocabulary() -> None:
    assert {SUCCEEDED, FINISHED_WITH_ERRORS, FAILED} <= {str(status) for status in FINISHED_STATUSES}
    assert JobStatus(FINISHED_WITH_ERRORS).label == "Finished with errors"


@pytest.mark.parametrize(
    ("share", "shown"),
    [
        (0.0, "0%"),
        (1 / 200, "0.5%"),
        (1 / 5000, "<0.1%"),
        (15 / 36, "42%"),
        (199 / 200, "99.5%"),
        (1.0, "100%"),
    ],
)
def test_a_share_never_reads_as_none_or_all_when_it_is_not(share: float, shown: str) -> None:
    assert percent(share) == shown
