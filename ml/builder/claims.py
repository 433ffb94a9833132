"""Per-sample stage state: rows made, claimed in batches, finished once, summarised.

The race each function prevents:

- ``claim_batch``: two stage jobs (shards, or a re-run beside a stalled attempt) must never take
  the same sample. ``SELECT ... FOR UPDATE SKIP LOCKED`` picks pending head rows no one else is
  choosing, and the UPDATE marks them claimed by this job's attempt in the same transaction.
- ``finish_units``: a batch's results are written only while every one of its rows is still
  claimed by this very attempt (status running, same job, same attempt), in one UPDATE and one
  transaction; otherwise ``ClaimLost`` is raised and nothing is written, so a reaped attempt that
  wakes up cannot finish a sample a second time.
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
from typing import Any, cast

from django.db import connections, router, transaction
from django.db.models import Count, Exists, Expression, F, Field, Model, OuterRef, Q, Sum, Value
from django.db.models.expressions import RawSQL
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


def claim_size(pending: int, size: int, shards: int) -> int:
    """Return how many units to claim when `pending` are left: `size`, or near the end of a stage
    shared by `shards` jobs an equal share of what is left (guided self-scheduling), so no shard
    is left alone with a whole batch while the others wait at the stage's end."""
    if shards <= 1:
        return size
    return max(1, min(size, -(-pending // shards)))


def claim_batch(job: Job, build_id: int, stage: str, size: int, shards: int = 1) -> list[list[SampleStage]]:
    """Claim up to `size` units (a sample, or a dialogue's turns in order) for this attempt; fewer
    near the end of a stage `shards` jobs share (`claim_size`)."""
    pending = SampleStage.objects.filter(
        build_id=build_id, stage=stage, status=SampleStageStatus.PENDING, head=True
    )
    with transaction.atomic():
        if shards > 1:
            # Counted over at most `size * shards` rows, so the count costs the same at 400K samples.
            size = claim_size(pending[: size * shards].count(), size, shards)
        # The heads are read whole with their samples in the locking read (only the state rows are
        # locked): a batch of single samples needs no other read.
        heads = list(
            pending.select_for_update(skip_locked=True, of=("self",))
            .select_related("sample", "sample__dialogue")
            .order_by("id")[:size]
        )
        if not heads:
            return []
        dialogue_ids = [row.sample.dialogue_id for row in heads if row.sample.dialogue_id is not None]
        # The other turns of a claimed dialogue are only ever taken with their head, and only
        # those still pending: a turn done for this stage (a re-run that redoes some turns only)
        # is done once.
        tail_ids = (
            list(
                SampleStage.objects.filter(
                    build_id=build_id,
                    stage=stage,
                    head=False,
                    status=SampleStageStatus.PENDING,
                    sample__dialogue_id__in=dialogue_ids,
                ).values_list("id", flat=True)
            )
            if dialogue_ids
            else []
        )
        head_ids = [row.pk for row in heads]
        mark = attempt_mark(job)
        SampleStage.objects.filter(id__in=head_ids + tail_ids).update(
            status=SampleStageStatus.RUNNING, claims=F("claims") + 1, **mark
        )
    if dialogue_ids:
        rows = list(
            SampleStage.objects.filter(id__in=head_ids + tail_ids)
            .select_related("sample", "sample__dialogue")
            .order_by("sample__dialogue_id", "sample__turn", "id")
        )
    else:
        # Single samples only: the rows read under the lock, as the UPDATE left them (they were
        # locked, so nothing else changed them), in the order the read above would give them.
        rows = sorted(heads, key=lambda row: (row.sample.turn, row.pk))
        for row in rows:
            row.status, row.claims = SampleStageStatus.RUNNING, row.claims + 1
            for name, value in mark.items():
                setattr(row, name, value)
    units: dict[Any, list[SampleStage]] = {}
    for row in rows:
        units.setdefault(row.sample.dialogue_id or f"s{row.sample_id}", []).append(row)
    return list(units.values())


def finish_unit(job: Job, rows: Sequence[SampleStage], results: Sequence[SampleResult]) -> None:
    """Record a unit's results, all or nothing, as the attempt that claimed it."""
    finish_units(job, [(rows, results)])


def _per_row(pairs: Sequence[tuple[SampleStage, SampleResult]], name: str, value_of: Any) -> Expression:
    return _by_id(SampleStage, name, {row.pk: value_of(result) for row, result in pairs})


def _by_id(model: type[Model], name: str, value_by_id: dict[int, Any]) -> Expression:
    """Return what an UPDATE of `model`'s rows `value_by_id` sets column `name` to: the one value
    when every row gets the same (no LLM calls at an audio stage, every sample kept), else
    `CASE id WHEN ... THEN ... END` written out, each value prepared as the field prepares it.
    The ORM's `Case(When(pk=...))` builds and resolves a filter per row: a batch's write spent
    most of its CPU there (bench/paper_scale.py)."""
    column = cast(Field, model._meta.get_field(name))  # a column of the row, never a relation
    values = list(value_by_id.values())
    if all(value == values[0] for value in values):
        return Value(values[0], column)
    connection = connections[router.db_for_write(model)]
    params: list[Any] = []
    for row_id, value in value_by_id.items():
        params += [row_id, column.get_db_prep_value(value, connection, prepared=False)]
    pk = connection.ops.quote_name(model._meta.pk.column)
    return RawSQL(f"CASE {pk}{' WHEN %s THEN %s' * len(values)} END", params, output_field=column)


def finish_units(job: Job, finished: Sequence[tuple[Sequence[SampleStage], Sequence[SampleResult]]]) -> None:
    """Record the results of a batch of units in one transaction, all or nothing, as the attempt
    that claimed them: one UPDATE of their state rows (written only while every one is still
    claimed by this attempt, else ``ClaimLost`` and nothing is written), then their samples."""
    pairs: list[tuple[SampleStage, SampleResult]] = []
    for rows, results in finished:
        by_sample = {result.sample_id: result for result in results}
        pairs.extend((row, by_sample[row.sample_id]) for row in rows)
    if not pairs:
        return
    now = timezone.now()
    with transaction.atomic():
        for stage in sorted({row.stage for row, _ in pairs}):
            staged = [(row, result) for row, result in pairs if row.stage == stage]
            ids = [row.pk for row, _ in staged]
            written = compare_and_set(
                claimed_by_attempt(
                    SampleStage.objects.filter(pk__in=ids, status=SampleStageStatus.RUNNING), job
                ),
                status=SampleStageStatus.DONE,
                outcome=_per_row(staged, "outcome", lambda r: Outcome.KEPT if r.kept else Outcome.DROPPED),
                reason=_per_row(staged, "reason", lambda r: r.reason[:64]),
                detail=_per_row(staged, "detail", lambda r: r.detail[:4000]),
                version=STAGE_VERSIONS[stage],
                llm_calls=_per_row(staged, "llm_calls", lambda r: r.llm_calls),
                prompt_tokens=_per_row(staged, "prompt_tokens", lambda r: r.prompt_tokens),
                completion_tokens=_per_row(staged, "completion_tokens", lambda r: r.completion_tokens),
                seconds=_per_row(staged, "seconds", lambda r: r.seconds),
                finished_at=now,
            )
            if written != len(ids):
                raise ClaimLost(
                    f"{len(ids) - written} of {len(ids)} samples at {stage} are no longer claimed by "
                    f"attempt {job.attempts}"
                )
        written_fields: dict[int, dict[str, Any]] = {}
        for row, result in pairs:
            fields = written_fields.setdefault(row.sample_id, {})
            fields.update(result.fields)
            if not result.kept:
                fields.update(
                    status=SampleStatus.DROPPED, dropped_at=row.stage, drop_reason=result.reason[:64]
                )
            if result.dialogue_fields and row.sample.dialogue_id is not None:
                BuildDialogue.objects.filter(pk=row.sample.dialogue_id).update(**result.dialogue_fields)
        _write_samples(written_fields)


def _write_samples(written_fields: dict[int, dict[str, Any]]) -> None:
    """Write each sample's fields: one UPDATE for the samples that set the same columns (a kept
    and a dropped sample set different ones), rather than one per sample."""
    by_columns: dict[tuple[str, ...], list[int]] = {}
    for sample_id, fields in written_fields.items():
        if fields:
            by_columns.setdefault(tuple(sorted(fields)), []).append(sample_id)
    for columns, sample_ids in by_columns.items():
        BuildSample.objects.filter(pk__in=sample_ids).update(
            **{
                name: _by_id(BuildSample, name, {pk: written_fields[pk][name] for pk in sample_ids})
                for name in columns
            }
        )


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
