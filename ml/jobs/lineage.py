"""Lineage both ways: what used a take, an item or a person's work, and what a checkpoint stands on.

It reads the manifest written when each export, snapshot and study was made (`TakeUse`, by take)
and follows the records from there: a snapshot's checkpoints (and every checkpoint trained from
them), a checkpoint's inference runs (their systems, the judge runs and studies of those
systems), and the judge runs of outputs answering the takes' items. It sits at the top of the
pipeline (ml.jobs) because it spans recording, gold, evaluation and training.

A withdrawal's report is `person_lineage` of the person: every earlier use of their takes, which
`TakeQuerySet.consented_for` keeps out of every new one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet

from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from annotation.recording.consent.models import TakeUse
from annotation.recording.models import Item, Review, Take
from evaluation.judging.models import JudgeRun
from evaluation.studies.models import Study, StudyRater
from ml.jobs.launch import INFERENCE_JOB
from ml.jobs.models import Checkpoint, DatasetSnapshot
from webapp.models import Job, User

SHOWN = 50  # rows of one kind a page lists; the download holds them all


@dataclass
class Lineage:
    """Everything that used a set of takes (or a person's work), earliest first within each kind."""

    subject: str
    takes: QuerySet[Take]
    exports: list[Job] = field(default_factory=list)
    snapshots: list[DatasetSnapshot] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    studies: list[Study] = field(default_factory=list)
    judge_runs: list[JudgeRun] = field(default_factory=list)
    rated_studies: list[Study] = field(default_factory=list)  # studies the person rated in

    @property
    def is_empty(self) -> bool:
        return not (self.exports or self.snapshots or self.checkpoints or self.studies or self.judge_runs)

    def as_dict(self) -> dict[str, Any]:
        """Return the report as plain data (the download), takes by public id."""
        return {
            "subject": self.subject,
            "takes": [str(public_id) for public_id in self.takes.values_list("public_id", flat=True)],
            "gold_exports": [{"job": job.pk, "at": job.created_at.isoformat()} for job in self.exports],
            "snapshots": [
                {"snapshot": s.pk, "purpose": s.purpose, "job": s.job_id, "at": s.created_at.isoformat()}
                for s in self.snapshots
            ],
            "checkpoints": [{"checkpoint": c.pk, "name": c.name, "kind": c.kind} for c in self.checkpoints],
            "studies": [{"study": s.pk, "name": s.name} for s in self.studies],
            "judge_runs": [
                {"judge_run": r.pk, "system": r.system.name, "benchmark_version": r.benchmark_version}
                for r in self.judge_runs
            ],
            "rated_in_studies": [{"study": s.pk, "name": s.name} for s in self.rated_studies],
        }


def _used_by(takes: QuerySet[Take], kind: str) -> QuerySet[TakeUse, Any]:
    return TakeUse.objects.filter(kind=kind, take__in=takes.values("pk")).values("used_by")


def with_descendants(checkpoints: Iterable[Checkpoint]) -> list[Checkpoint]:
    """Return the checkpoints and every checkpoint trained from them (one query per generation)."""
    found = {checkpoint.pk: checkpoint for checkpoint in checkpoints}
    frontier = list(found)
    while frontier:
        children = list(Checkpoint.objects.filter(parent_id__in=frontier).exclude(pk__in=list(found)))
        found.update((child.pk, child) for child in children)
        frontier = [child.pk for child in children]
    return sorted(found.values(), key=lambda checkpoint: checkpoint.pk)


def takes_lineage(takes: QuerySet[Take], subject: str) -> Lineage:
    """Return every earlier export, snapshot, checkpoint, study and judge run that used `takes`."""
    snapshots = list(DatasetSnapshot.objects.filter(pk__in=_used_by(takes, TakeUse.SNAPSHOT)).order_by("pk"))
    items = Item.objects.filter(pk__in=takes.values("item_id"))
    return Lineage(
        subject=subject,
        takes=takes,
        exports=list(Job.objects.filter(pk__in=_used_by(takes, TakeUse.GOLD_EXPORT)).order_by("pk")),
        snapshots=snapshots,
        checkpoints=with_descendants(Checkpoint.objects.filter(dataset_snapshot__in=snapshots)),
        studies=list(Study.objects.filter(pk__in=_used_by(takes, TakeUse.STUDY)).order_by("pk")),
        judge_runs=list(
            JudgeRun.objects.filter(judgements__output__item__in=items)
            .distinct()
            .select_related("system")
            .order_by("pk")
        ),
    )


def item_lineage(item: Item) -> Lineage:
    """Return what used any take of the item."""
    return takes_lineage(Take.objects.filter(item=item), f"item {item.external_id}")


def person_lineage(person: User) -> Lineage:
    """Return what used the person's work: their takes (as an actor), the takes they reviewed and
    the items they labelled (as reviewer and annotator), and the studies they rated in."""
    labelled = Annotation.objects.submitted().filter(annotator=person).values("item_id")
    reviewed = Review.objects.filter(reviewer=person).values("take_id")
    takes = Take.objects.filter(Q(actor=person) | Q(pk__in=reviewed) | Q(item_id__in=labelled))
    lineage = takes_lineage(takes, f"user {person.get_username()}")
    lineage.rated_studies = list(
        Study.objects.filter(pk__in=StudyRater.objects.filter(evaluator=person).values("study_id")).order_by(
            "pk"
        )
    )
    return lineage


@dataclass(frozen=True)
class CheckpointLineage:
    """What a checkpoint stands on (its own and its ancestors' data) and what was run on it."""

    ancestors: list[Checkpoint]  # itself first, then what it was trained from
    snapshots: list[DatasetSnapshot]
    gold: QuerySet[GoldReference]
    takes: QuerySet[Take]
    annotators: list[tuple[str, int]]  # (user name, submitted annotations behind the gold)
    inference_jobs: list[Job]
    judge_runs: list[JudgeRun]
    studies: list[Study]


def _ancestors(checkpoint: Checkpoint) -> Iterator[Checkpoint]:
    seen: set[int] = set()
    current: Checkpoint | None = checkpoint
    while current is not None and current.pk not in seen:
        seen.add(current.pk)
        yield current
        current = current.parent


def checkpoint_lineage(checkpoint: Checkpoint) -> CheckpointLineage:
    """Return the snapshots (and build export versions) the checkpoint and its ancestors trained
    on, the gold versions, takes and annotators behind them, and the evaluations run on it."""
    ancestors = list(_ancestors(checkpoint))
    snapshots = list(
        DatasetSnapshot.objects.filter(
            pk__in=[c.dataset_snapshot_id for c in ancestors if c.dataset_snapshot_id]
        )
        .select_related("build_export")
        .order_by("pk")
    )
    gold_ids = sorted({gold_id for snapshot in snapshots for gold_id in snapshot.gold_reference_ids})
    gold = GoldReference.objects.filter(pk__in=gold_ids).select_related("item").order_by("item__external_id")
    takes = Take.objects.filter(
        pk__in=TakeUse.objects.filter(kind=TakeUse.SNAPSHOT, used_by__in=[s.pk for s in snapshots]).values(
            "take_id"
        )
    )
    annotators = list(
        Annotation.objects.submitted()
        .filter(item_id__in=gold.values("item_id"))
        .values_list("annotator__username")
        .annotate(n=Count("pk"))
        .order_by("annotator__username")
    )
    inference_jobs = list(
        Job.objects.filter(kind=INFERENCE_JOB, result__checkpoint=checkpoint.pk).order_by("pk")
    )
    systems = [(job.result or {}).get("system") for job in inference_jobs]
    systems = [system for system in systems if system]
    return CheckpointLineage(
        ancestors=ancestors,
        snapshots=snapshots,
        gold=gold,
        takes=takes,
        annotators=annotators,
        inference_jobs=inference_jobs,
        judge_runs=list(
            JudgeRun.objects.filter(system_id__in=systems).select_related("system").order_by("pk")
        ),
        studies=list(Study.objects.filter(systems__in=systems).distinct().order_by("pk")),
    )
