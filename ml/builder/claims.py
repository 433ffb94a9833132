"""Per-sample stage state: rows made, claimed in batches, finished once, summarised.

The race each function prevents:

- ``claim_batch``: two stage jobs (shards, or a re-run beside a stalled attempt) must never take
  the same sample. ``SELECT ... FOR UPDATE SKIP LOCKED`` picks pending head rows no one else is
  choosing, and the UPDATE marks them claimed by this job's attempt in the same transaction.
- ``finish_unit``: a result is written only while the rows are still claimed by this very attempt
  (status running, same job, same attempt); otherwise ``ClaimLost`` is raised and nothing is
  written, so a reaped attempt that wakes up cannot finish a sample a second time.
- ``release_dead_claims``: rows held by an earlier attempt of this job (its worker died), or by this
  attempt before a database error made it start the stage over (``webapp.jobs.run_job``), go back
  to pending before this attempt claims anything; rows of finished jobs likewise when a stage resumes.

Who owns a row is the job machinery's one rule (`webapp.jobs.attempt_mark`, `claimed_by_attempt`),
the same that guards the job row itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import reduce
from operator import or_
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Sum
from django.utils import timezone

from ml.builder.models import (
    BuildDialogue,
    BuildSample,
    BuildStage,
    Outcome,
    SampleStage,
    SampleStageStatus,
    SampleStatus,
)
from ml.builder.stages import DIALOGUE_BROKEN, ERROR_REASONS, STAGE_VERSIONS, TRAJECTORIES
from webapp.db import compare_and_set
from webapp.jobs import attempt_mark, claimed_by_attempt, claimed_by_earlier_attempt
from webapp.lib.row_outcome import RowTally
from webapp.models import FINISHED_STATUSES, Job

ROW_BATCH = 2000
# A done row the stage failed on: dropped for an error, or a turn dropped with its dialogue because
# another turn failed (``drop_whole_dialogue`` names the reason in the detail).
ERROR_DROPS = Q(outcome=Outcome.DROPPED) & (
    Q(reason__in=ERROR_REASONS)
    | Q(reason=DIALOGUE_BROKEN) & reduce(or_, (Q(detail__endswith=f"({reason})") for reason in ERROR_REASONS))
)
ROW_NOUN = "samples"


class ClaimLost(Exception):
    """This attempt no longer holds the rows it meant to finish (it was reaped and re-run)."""


@dataclass(frozen=True)
class SampleResult:
    """What one stage made of one sample: kept or dropped, the fields to store, what it cost."""

    sample_id: int
    kept: bool
    reason: str = ""
    detail: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    dialogue_fields: dict[str, Any] = field(default_factory=dict)  # e.g. the planned trajectory
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


def ensure_rows(build_id: int, stage: str) -> int:
    """Create the stage's pending row for every active sample that has none; return rows made.

    Trajectories concern dialogues only; every other stage takes every active sample. Idempotent
    (the unique constraint ignores rows that exist), so shards and re-runs may all call it.
    """
    made, last = 0, 0
    samples = BuildSample.objects.filter(build_id=build_id, status=SampleStatus.ACTIVE).exclude(
        stage_rows__stage=stage
    )
    if stage == TRAJECTORIES:
        samples = samples.filter(dialogue__isnull=False)
    while True:
        chunk = list(samples.filter(id__gt=last).order_by("id").values_list("id", "turn")[:ROW_BATCH])
        if not chunk:
            return made
        rows = [
            SampleStage(build_id=build_id, sample_id=sample_id, stage=stage, head=turn <= 1)
            for sample_id, turn in chunk
        ]
        made += len(SampleStage.objects.bulk_create(rows, ignore_conflicts=True))
        last = chunk[-1][0]


def release_dead_claims(job: Job, build_id: int, stage: str) -> int:
    """Put back to pending the rows earlier attempts or calls of this job, or finished jobs, left claimed."""
    running = SampleStage.objects.filter(build_id=build_id, stage=stage, status=SampleStageStatus.RUNNING)
    # The finished-job test is an EXISTS over the row, not a join: compare_and_set keeps every
    # condition on the rows it writes, so a claim taken meanwhile is never released.
    job_finished = Exists(Job.objects.filter(pk=OuterRef("claimed_job_id"), status__in=FINISHED_STATUSES))
    dead = claimed_by_earlier_attempt(job) | Q(claimed_job__isnull=True) | Q(job_finished)
    return compare_and_set(running.filter(dead), status=SampleStageStatus.PENDING)


def claim_batch(job: Job, build_id: int, stage: str, size: int) -> list[list[SampleStage]]:
    """Claim up to `size` units (a sample, or a dialogue's turns in order) for this attempt."""
    with transaction.atomic():
        head_ids = list(
            SampleStage.objects.select_for_update(skip_locked=True)
            .filter(build_id=build_id, stage=stage, status=SampleStageStatus.PENDING, head=True)
            .order_by("id")
            .values_list("id", flat=True)[:size]
        )
        if not head_ids:
            return []
        heads = SampleStage.objects.filter(id__in=head_ids)
        dialogue_ids = [d for d in heads.values_list("sample__dialogue_id", flat=True) if d is not None]
        # The other turns of a claimed dialogue are only ever taken with their head, and only
        # those still pending: a turn done for this stage (a re-run that redoes some turns only)
        # is done once.
        tail_ids = list(
            SampleStage.objects.filter(
                build_id=build_id,
                stage=stage,
                head=False,
                status=SampleStageStatus.PENDING,
                sample__dialogue_id__in=dialogue_ids,
            ).values_list("id", flat=True)
        )
        SampleStage.objects.filter(id__in=head_ids + tail_ids).update(
            status=SampleStageStatus.RUNNING,
            claims=F("claims") + 1,
            **attempt_mark(job),
        )
    rows = list(
        SampleStage.objects.filter(id__in=head_ids + tail_ids)
        .select_related("sample", "sample__dialogue")
        .order_by("sample__dialogue_id", "sample__turn", "id")
    )
    units: dict[Any, list[SampleStage]] = {}
    for row in rows:
        units.setdefault(row.sample.dialogue_id or f"s{row.sample_id}", []).append(row)
    return list(units.values())


def finish_unit(job: Job, rows: Sequence[SampleStage], results: Sequence[SampleResult]) -> None:
    """Record a unit's results, all or nothing, as the attempt that claimed it."""
    by_sample = {result.sample_id: result for result in results}
    now = timezone.now()
    with transaction.atomic():
        for row in rows:
            result = by_sample[row.sample_id]
            written = compare_and_set(
                claimed_by_attempt(
                    SampleStage.objects.filter(pk=row.pk, status=SampleStageStatus.RUNNING), job
                ),
                status=SampleStageStatus.DONE,
                outcome=Outcome.KEPT if result.kept else Outcome.DROPPED,
                reason=result.reason[:64],
                detail=result.detail[:4000],
                version=STAGE_VERSIONS[row.stage],
                llm_calls=result.llm_calls,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                seconds=result.seconds,
                finished_at=now,
            )
            if not written:
                raise ClaimLost(f"{row.sample} at {row.stage} is no longer claimed by attempt {job.attempts}")
            fields = dict(result.fields)
            if not result.kept:
                fields.update(
                    status=SampleStatus.DROPPED, dropped_at=row.stage, drop_reason=result.reason[:64]
                )
            if fields:
                BuildSample.objects.filter(pk=row.sample_id).update(**fields)
            if result.dialogue_fields and row.sample.dialogue_id is not None:
                BuildDialogue.objects.filter(pk=row.sample.dialogue_id).update(**result.dialogue_fields)


def stage_progress(build_id: int, stage: str) -> tuple[int, int]:
    """Return (rows done, rows in all) of a stage."""
    rows = SampleStage.objects.filter(build_id=build_id, stage=stage)
    totals = rows.aggregate(total=Count("id"), done=Count("id", filter=Q(status=SampleStageStatus.DONE)))
    return int(totals["done"]), int(totals["total"])


def unfinished_rows(build_id: int, stage: str) -> int:
    """Return how many rows of a stage are pending or claimed."""
    return (
        SampleStage.objects.filter(build_id=build_id, stage=stage)
        .exclude(status=SampleStageStatus.DONE)
        .count()
    )


def refresh_summary(stage_row: BuildStage) -> BuildStage:
    """Recompute the stage's counts and cost from its rows (aggregates, never increments)."""
    rows = SampleStage.objects.filter(build_id=stage_row.build_id, stage=stage_row.stage, status="done")
    totals = rows.aggregate(
        made=Count("id"),
        kept=Count("id", filter=Q(outcome=Outcome.KEPT)),
        llm_calls=Sum("llm_calls"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        seconds=Sum("seconds"),
    )
    reasons = dict(
        rows.filter(outcome=Outcome.DROPPED)
        .values_list("reason")
        .annotate(n=Count("id"))
        .values_list("reason", "n")
    )
    made, kept = int(totals["made"]), int(totals["kept"])
    stage_row.counts = {
        "made": made,
        "kept": kept,
        "dropped": made - kept,
        "errors": rows.filter(ERROR_DROPS).count(),
        "reasons": reasons,
    }
    seconds = float(totals["seconds"] or 0.0)
    stage_row.cost = {
        "llm_calls": int(totals["llm_calls"] or 0),
        "prompt_tokens": int(totals["prompt_tokens"] or 0),
        "completion_tokens": int(totals["completion_tokens"] or 0),
        "seconds": round(seconds, 3),
    }
    if stage_row.started_at is not None:
        elapsed = ((stage_row.finished_at or timezone.now()) - stage_row.started_at).total_seconds()
        stage_row.cost["wall_seconds"] = round(elapsed, 3)
        stage_row.cost["samples_per_second"] = round(made / elapsed, 3) if elapsed > 0 else 0.0
    BuildStage.objects.filter(pk=stage_row.pk).update(counts=stage_row.counts, cost=stage_row.cost)
    return stage_row


def stage_tally(counts: dict[str, Any] | None) -> RowTally | None:
    """Return a stage's tally from its counts: the rows it finished, those it failed on (None
    before it counted any, or for counts written before errors were counted)."""
    if not counts or "errors" not in counts:
        return None
    return RowTally(int(counts["made"]), int(counts["errors"]), ROW_NOUN)


def job_tally(job: Job, build_id: int, stage: str) -> RowTally:
    """Return the tally of the rows of a stage that `job` (any attempt of it) finished."""
    rows = SampleStage.objects.filter(
        build_id=build_id, stage=stage, status=SampleStageStatus.DONE, claimed_job=job
    )
    totals = rows.aggregate(made=Count("id"), errors=Count("id", filter=ERROR_DROPS))
    return RowTally(int(totals["made"]), int(totals["errors"]), ROW_NOUN)


def drop_whole_dialogue(
    sample_turns: Sequence[tuple[int, int]], results: Sequence[SampleResult]
) -> list[SampleResult]:
    """Return one result per (sample id, turn) of a unit, every turn dropped when one of them was.

    A dialogue with a hole in it trains nothing useful, so the turns a step kept (or never reached,
    having stopped at the dropped one) are dropped too, naming the turn that broke the dialogue.
    """
    done = {result.sample_id: result for result in results}
    dropped = next((result for result in results if not result.kept), None)
    if dropped is None:
        return [done[sample_id] for sample_id, _ in sample_turns]
    turn_of = dict(sample_turns)
    detail = f"turn {turn_of[dropped.sample_id]} was dropped ({dropped.reason})"
    return [
        done[sample_id]
        if sample_id in done and not done[sample_id].kept
        else replace(
            done.get(sample_id) or SampleResult(sample_id, False),
            kept=False,
            reason=DIALOGUE_BROKEN,
            detail=detail,
        )
        for sample_id, _ in sample_turns
    ]
