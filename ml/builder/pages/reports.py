"""The build page's figures: per-stage counts, top drop reasons, cost, spot-check acceptance.

Counts and cost come from ``BuildStage.counts`` / ``cost``, which the pipeline recomputes from
the per-sample rows (``claims.refresh_summary``); acceptance comes from submitted spot-checks
through ``rules.acceptance_by_stage``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from ml.builder.claims import ROW_NOUN, stage_tally
from ml.builder.models import Build, BuildSample, BuildStage, BuildStatus, SampleStatus, SpotCheck
from ml.builder.pages.rules import (
    REASON_TITLES,
    CheckedSample,
    StageAcceptance,
    overall_acceptance,
)
from ml.builder.stages import PLAN, STAGE_TITLES
from webapp.lib import row_outcome
from webapp.lib.row_outcome import RowTally
from webapp.lib.stats import Proportion

TOP_REASONS = 5


@dataclass(frozen=True)
class StageReport:
    row: BuildStage
    title: str
    made: int
    kept: int
    dropped: int
    top_reasons: list[tuple[str, int]]
    cost: dict[str, Any]
    acceptance: StageAcceptance | None
    tally: RowTally | None = None  # the rows it finished and those it failed on (`claims.stage_tally`)

    @property
    def outcome(self) -> str:
        """Return the stage's end in words with its figures, once it has ended ("" before)."""
        if self.tally is None or self.row.status not in ("done", "failed"):
            return ""
        return self.tally.sentence()


def stage_reports(build: Build, acceptance: list[StageAcceptance]) -> list[StageReport]:
    """Return one report per stage row of the build, in pipeline order."""
    by_stage = {entry.stage: entry for entry in acceptance}
    reports = []
    for row in BuildStage.objects.filter(build=build).select_related("job").order_by("id"):
        counts = row.counts or {}
        reasons = sorted((counts.get("reasons") or {}).items(), key=lambda pair: (-pair[1], pair[0]))
        reports.append(
            StageReport(
                row=row,
                title=STAGE_TITLES.get(row.stage, row.stage),
                made=int(counts.get("made", 0)),
                kept=int(counts.get("kept", 0)),
                dropped=int(counts.get("dropped", 0)),
                top_reasons=reasons[:TOP_REASONS],
                cost=row.cost or {},
                acceptance=None if row.stage == PLAN else by_stage.get(row.stage),
                tally=None if row.stage == PLAN else stage_tally(counts),
            )
        )
    return reports


@dataclass(frozen=True)
class BuildOutcome:
    """How a build ended in the one status vocabulary (docs/jobs.md), once it has ended."""

    status: str  # succeeded, finished_with_errors, failed; "" while it runs (or never started)
    tally: RowTally | None  # planned samples, and those a stage failed on (every stage's errors)
    sentence: str  # the status with its figures, and where a failed build stopped


def build_outcome(build: Build, stages: Iterable[BuildStage], planned: int | None = None) -> BuildOutcome:
    """Return the build's end: its samples, those its stages failed on, and the stage that stopped it.

    A sample fails at most once (a failed row is dropped, and later stages never see it), so the
    build's failed samples are the sum of its stages' failed rows. `planned` saves counting the
    build's samples again where a list has counted them.
    """
    tallies = [(row, stage_tally(row.counts)) for row in stages if row.stage != PLAN]
    failed = sum(tally.failed for _, tally in tallies if tally is not None)
    samples = build.samples.count() if planned is None else planned
    tally = RowTally(max(samples, failed), failed, ROW_NOUN)
    stopped = next(
        (
            (row, stage)
            for row, stage in tallies
            if row.status == "failed" and stage is not None and stage.status == row_outcome.FAILED
        ),
        None,
    )
    if build.status == BuildStatus.FAILED and stopped is not None:
        row, stage = stopped
        sentence = (
            f"Failed at {STAGE_TITLES.get(row.stage, row.stage)}: {stage.failed} of {stage.rows} "
            f"{ROW_NOUN} failed ({row_outcome.percent(stage.share)}), more than "
            f"{row_outcome.FAILED_ERROR_SHARE:.0%}, so nothing usable would come downstream; "
            "the build stopped there. Fix the cause and resume: the rows that failed are done again."
        )
        return BuildOutcome(row_outcome.FAILED, tally, sentence)
    if build.status == BuildStatus.FAILED:
        return BuildOutcome(row_outcome.FAILED, tally, "")  # a stage job failed: "stopped short"
    if build.status != BuildStatus.SUCCEEDED:
        return BuildOutcome("", tally, "")
    # A finished build went through every stage, each within the threshold: its samples' failures
    # read "finished with errors" even when they add up past it over many stages.
    if tally.failed == 0:
        return BuildOutcome(row_outcome.SUCCEEDED, tally, tally.sentence())
    sentence = (
        f"Finished with errors: {tally.failed} of {tally.rows} {ROW_NOUN} failed "
        f"({row_outcome.percent(tally.share)})"
    )
    return BuildOutcome(row_outcome.FINISHED_WITH_ERRORS, tally, sentence)


def checked_samples(build: Build) -> list[CheckedSample]:
    """Return the build's submitted spot-checks as the acceptance figures read them."""
    rows = SpotCheck.objects.filter(build=build, submitted_at__isnull=False).values_list(
        "verdict", "stage", "sample__dialogue_id"
    )
    return [CheckedSample(verdict, stage, dialogue is not None) for verdict, stage, dialogue in rows]


@dataclass(frozen=True)
class SpotCheckSummary:
    drawn: int
    decided: int
    open: int
    overall: Proportion
    verdicts: dict[str, int]
    reasons: list[tuple[str, str, int]]  # (reason, title, count), most common first


def spot_check_summary(build: Build, checks: list[CheckedSample]) -> SpotCheckSummary:
    """Return how many checks were drawn and decided, the verdicts, and the reasons given."""
    totals = SpotCheck.objects.filter(build=build).aggregate(
        drawn=Count("id"), decided=Count("id", filter=Q(submitted_at__isnull=False))
    )
    verdicts = {verdict: 0 for verdict in ("keep", "fix", "drop")}
    for check in checks:
        verdicts[check.verdict] = verdicts.get(check.verdict, 0) + 1
    reason_counts: dict[str, int] = {}
    for reasons in SpotCheck.objects.filter(build=build, submitted_at__isnull=False).values_list(
        "reasons", flat=True
    ):
        for reason in reasons:
            reason_counts[reason] = reason_counts.get(reason, 0) + 1
    ranked = sorted(reason_counts.items(), key=lambda pair: (-pair[1], pair[0]))
    return SpotCheckSummary(
        drawn=int(totals["drawn"]),
        decided=int(totals["decided"]),
        open=int(totals["drawn"]) - int(totals["decided"]),
        overall=overall_acceptance(checks),
        verdicts=verdicts,
        reasons=[(reason, REASON_TITLES.get(reason, reason), n) for reason, n in ranked],
    )


def acceptance_chart(acceptance: list[StageAcceptance]) -> dict[str, Any]:
    """Return the chart data: acceptance in percent per stage with its 95% interval."""
    shown = [entry for entry in acceptance if entry.accepted.trials]

    def percent(value: float | None) -> float | None:
        return None if value is None else round(100 * value, 1)

    return {
        "labels": [STAGE_TITLES[entry.stage] for entry in shown],
        "rate": [percent(entry.accepted.rate) for entry in shown],
        "low": [percent(entry.accepted.low) for entry in shown],
        "high": [percent(entry.accepted.high) for entry in shown],
        "n": [entry.accepted.trials for entry in shown],
    }


def sample_totals(build: Build) -> dict[str, int]:
    """Return how many samples the build planned, finished and dropped."""
    totals = build.samples.aggregate(
        planned=Count("id"), dropped=Count("id", filter=Q(status=SampleStatus.DROPPED))
    )
    return {
        "planned": int(totals["planned"]),
        "finished": BuildSample.objects.filter(build=build).finished().count(),
        "dropped": int(totals["dropped"]),
    }
