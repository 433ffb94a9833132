"""Numbers of the recording dashboard: acceptance rates and reviewer agreement on verdicts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from webapp.lib.stats import fleiss_kappa

VERDICTS = ("accept", "reject")


@dataclass(frozen=True)
class VerdictAgreement:
    takes: int  # takes with a full set of verdicts, the subjects of kappa
    kappa: float | None  # None when undefined: no takes, or every verdict the same
    unanimous_share: float | None  # share of those takes whose reviewers all agreed
    note: str  # why kappa is None, for the page


def acceptance_rate(accepted: int, rejected: int) -> float | None:
    """Return accepted / decided takes, or None when none has been decided yet."""
    decided = accepted + rejected
    return accepted / decided if decided else None


def verdict_agreement(
    verdicts_per_take: Iterable[Sequence[str]], reviewers_per_take: int
) -> VerdictAgreement:
    """Return Fleiss' kappa of accept/reject verdicts over takes with `reviewers_per_take` verdicts.

    Takes with fewer verdicts (still under review, or reviewers replaced) are left out: Fleiss'
    kappa needs the same number of ratings per subject.
    """
    table = [
        [list(verdicts).count(category) for category in VERDICTS]
        for verdicts in verdicts_per_take
        if len(verdicts) == reviewers_per_take and all(verdict in VERDICTS for verdict in verdicts)
    ]
    if not table:
        return VerdictAgreement(0, None, None, "No take has all its verdicts yet.")
    unanimous = sum(1 for row in table if max(row) == reviewers_per_take) / len(table)
    if all(row[0] == reviewers_per_take for row in table) or all(
        row[1] == reviewers_per_take for row in table
    ):
        return VerdictAgreement(
            len(table),
            None,
            unanimous,
            "Every verdict is the same, so chance agreement is total and kappa undefined.",
        )
    return VerdictAgreement(len(table), fleiss_kappa(table), unanimous, "")
