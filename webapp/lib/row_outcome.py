"""How a job over many rows ended: the one status vocabulary of every such job (docs/jobs.md).

Judge runs, inference, voicing, reward scoring, builder stages, imports and exports each work row
by row, and a row that fails is recorded as that row's error while the others are kept. Their end
is told by three words, from two counts (rows the job stood for, rows that failed):

- **succeeded**: every row was done;
- **finished with errors**: some rows failed (the count and the share are shown wherever the
  status is: status line, page header, runs list, API, the ``echostudio`` client);
- **failed**: nothing usable came out (every row failed), or more than ``FAILED_ERROR_SHARE`` of
  the rows failed, beyond which the job's figures no longer stand for its rows.

A job with no rows to do succeeded: it had nothing left to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

SUCCEEDED: Final = "succeeded"
FINISHED_WITH_ERRORS: Final = "finished_with_errors"
FAILED: Final = "failed"
LABELS: Final = {SUCCEEDED: "Succeeded", FINISHED_WITH_ERRORS: "Finished with errors", FAILED: "Failed"}
# More than half the rows failed: what is left is a minority of the rows, chosen by whatever made
# the others fail, so a mean over it would not stand for the job's rows (docs/jobs.md).
FAILED_ERROR_SHARE: Final = 0.5
# The key of a job's result that carries its tally (`RowTally.as_result`).
RESULT_KEY: Final = "rows"


def percent(share: float) -> str:
    """Return a share as a percentage a reader can trust at both ends: one failed row in 200 is
    "0.5%", never "0%", and 199 in 200 is "99.5%", never "100%"."""
    if share <= 0 or share >= 1:
        return f"{share:.0%}"
    if share < 0.001:
        return "<0.1%"
    if share > 0.999:
        return ">99.9%"
    if share < 0.01 or share > 0.99:
        return f"{share:.1%}"
    return f"{share:.0%}"


def outcome(rows: int, failed: int) -> str:
    """Return the status of a job that stood for `rows` rows of which `failed` failed."""
    if rows < 0 or failed < 0 or failed > rows:
        raise ValueError(f"a tally needs 0 <= failed <= rows (got {failed} of {rows})")
    if failed == 0:
        return SUCCEEDED
    if failed == rows or failed / rows > FAILED_ERROR_SHARE:
        return FAILED
    return FINISHED_WITH_ERRORS


@dataclass(frozen=True)
class RowTally:
    """What a job over many rows stands on: how many rows, how many of them failed."""

    rows: int
    failed: int
    noun: str = "rows"  # what a row is, in words ("stages", "outputs", "samples")

    def __post_init__(self) -> None:
        outcome(self.rows, self.failed)  # refuses an impossible tally at once

    @property
    def done(self) -> int:
        """Return the rows that did not fail."""
        return self.rows - self.failed

    @property
    def share(self) -> float:
        """Return the failed rows' share of all rows (0 when there were none)."""
        return self.failed / self.rows if self.rows else 0.0

    @property
    def status(self) -> str:
        """Return succeeded, finished_with_errors or failed (`outcome`)."""
        return outcome(self.rows, self.failed)

    def sentence(self) -> str:
        """Return the status in words with the figures it rests on, e.g. for a status line."""
        status = self.status
        if status == SUCCEEDED:
            return f"Succeeded: all {self.rows} {self.noun} done"
        failed = f"{self.failed} of {self.rows} {self.noun} failed ({percent(self.share)})"
        if status == FINISHED_WITH_ERRORS:
            return f"Finished with errors: {failed}"
        if self.done == 0:
            return f"Failed: nothing usable, {failed}"
        return f"Failed: {failed}, more than {FAILED_ERROR_SHARE:.0%}"

    def as_result(self) -> dict[str, Any]:
        """Return the tally as a job result stores it (under ``RESULT_KEY``)."""
        return {
            "total": self.rows,
            "failed": self.failed,
            "noun": self.noun,
            "status": self.status,
            "share": round(self.share, 4),
            "percent": percent(self.share),
        }


def tally_of(result: Mapping[str, Any] | None) -> RowTally | None:
    """Return the tally a job's result carries, or None for a job that does not work row by row."""
    if not isinstance(result, Mapping):
        return None
    data = result.get(RESULT_KEY)
    if not isinstance(data, Mapping):
        return None
    return RowTally(int(data["total"]), int(data["failed"]), str(data.get("noun") or "rows"))
