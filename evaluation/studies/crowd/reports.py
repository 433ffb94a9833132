"""What an admin reads of a crowd study: each rater's progress and screening, and the payment sheet.

The payment sheet has one row per external rater (id, status, time on task, bonus); the bonus
file is what Prolific's bulk bonus box takes: one `participant_id,amount` line per rater paid.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from evaluation.studies.crowd.models import CrowdLink, CrowdRater, CrowdScreening
from webapp.lib.spreadsheet import csv_row


@dataclass(frozen=True)
class RaterRow:
    external_id: str
    status: str
    seconds_on_task: int | None
    bonus: Decimal
    screenings: tuple[str, ...]  # e.g. "headphones 5/6 passed"


def rater_rows(link: CrowdLink) -> list[RaterRow]:
    """Return every rater of the link in arrival order, with their screening results."""
    raters = CrowdRater.objects.filter(link=link).prefetch_related("screenings").order_by("created_at", "pk")
    return [_row(link, rater) for rater in raters]


def _row(link: CrowdLink, rater: CrowdRater) -> RaterRow:
    spent = rater.time_on_task()
    return RaterRow(
        external_id=rater.external_id,
        status=rater.status(),
        seconds_on_task=None if spent is None else round(spent.total_seconds()),
        bonus=link.bonus if rater.completed_at is not None else Decimal(0),
        screenings=tuple(_screening(screening) for screening in rater.screenings.all()),
    )


def _screening(screening: CrowdScreening) -> str:
    if screening.finished_at is None:
        return f"{screening.test} started"
    verdict = "passed" if screening.passed else "failed"
    return f"{screening.test} {screening.correct}/{len(screening.trials)} {verdict}"


def payment_sheet_csv(link: CrowdLink) -> str:
    """Return the payment sheet: participant id, status, time on task, bonus (with a header)."""
    lines = [csv_row(["participant_id", "status", "seconds_on_task", "bonus"])]
    for row in rater_rows(link):
        seconds = "" if row.seconds_on_task is None else str(row.seconds_on_task)
        lines.append(csv_row([row.external_id, row.status, seconds, f"{row.bonus:.2f}"]))
    return "".join(lines)


def bulk_bonus_lines(link: CrowdLink) -> str:
    """Return Prolific's bulk bonus text: `participant_id,amount` per completed rater with a bonus."""
    return "".join(
        csv_row([row.external_id, f"{row.bonus:.2f}"]) for row in rater_rows(link) if row.bonus > 0
    )
