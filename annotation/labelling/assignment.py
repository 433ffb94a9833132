"""Assigning annotators to recorded items: the project's N (default 3), least-loaded first.

An item is assigned when its recording is accepted (`start_annotation_when_recorded`, connected
to `recording_accepted` in AnnotationConfig.ready), and by the sweep `assign_waiting_items` (the
lead's button and `manage.py assign_annotators`) for items still short of annotators.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Q

from annotation.labelling.models import DEFAULT_ANNOTATORS_PER_ITEM, Annotation, AnnotationProject
from annotation.recording.assignment import Workload, pick_least_loaded
from annotation.recording.models import Item
from webapp.roles import Role, users_with_role


@dataclass(frozen=True)
class AssignmentResult:
    item_id: int
    assigned: list[int] = field(default_factory=list)  # user ids newly assigned
    wanted: int = 0  # annotators the item should have
    shortfall: int = 0  # how many more it needs than the pool could give


def project_for(item: Item, projects: Iterable[AnnotationProject] | None = None) -> AnnotationProject | None:
    """Return the first active project (by priority) covering the item, or None."""
    candidates = projects if projects is not None else AnnotationProject.objects.filter(active=True)
    return next((project for project in candidates if project.active and project.covers(item)), None)


def annotator_pool(project: AnnotationProject | None) -> list[int]:
    """Return the ids of active users who may be assigned in the project.

    By default every annotator except lead annotators, who adjudicate; a project that lists its
    annotators uses exactly those (leads included) who still hold the annotator role.
    """
    annotators = users_with_role(Role.ANNOTATOR)
    if project is not None and project.annotators.exists():
        annotators = annotators.filter(pk__in=project.annotators.values("pk"))
    else:
        annotators = annotators.exclude(pk__in=users_with_role(Role.LEAD_ANNOTATOR).values("pk"))
    return sorted(annotators.values_list("pk", flat=True))


class _Loads:
    """Open and total annotation counts per annotator, kept current while assigning a batch."""

    def __init__(self) -> None:
        self.open: dict[int, int] = {}
        self.total: dict[int, int] = {}

    def ensure(self, user_ids: Sequence[int]) -> None:
        """Count the current work of annotators not seen yet in this batch."""
        missing = [user_id for user_id in user_ids if user_id not in self.total]
        if not missing:
            return
        for user_id in missing:
            self.open[user_id] = self.total[user_id] = 0
        rows = (
            Annotation.objects.filter(annotator_id__in=missing)
            .values("annotator_id")
            .annotate(total=Count("id"), open=Count("id", filter=Q(status__in=Annotation.OPEN_STATUSES)))
        )
        for row in rows:
            self.open[row["annotator_id"]] = row["open"]
            self.total[row["annotator_id"]] = row["total"]

    def pick(self, pool: Sequence[int], *, exclude: set[int], count: int) -> list[int]:
        """Return up to `count` annotators with the least open work, then the least work ever."""
        loads = [Workload(user_id, self.open[user_id], self.total[user_id]) for user_id in pool]
        chosen = pick_least_loaded(loads, exclude=exclude, count=count)
        for user_id in chosen:
            self.open[user_id] += 1
            self.total[user_id] += 1
        return chosen


def assign_annotators(item: Item) -> AssignmentResult:
    """Give a recorded item its annotators (the project's N, default 3), least-loaded first."""
    projects = list(AnnotationProject.objects.filter(active=True).prefetch_related("annotators"))
    results = assign_items([item.pk], projects=projects)
    # An item no longer waiting for labels (already gold, or not recorded yet) gets nobody new.
    return results[0] if results else AssignmentResult(item_id=item.pk)


def start_annotation_when_recorded(sender: object, *, item_id: int, **_: object) -> None:
    """Receive `recording_accepted`: assign the item's annotators once the verdict has committed.

    After commit, because the assignment runs its own transactions and locks and must see the
    item as recorded; the verdict's transaction still holds the item row until then.
    """
    transaction.on_commit(lambda: _assign_if_still_there(item_id))


# An EchoMind delivery (evaluation.echomind) is scored by its questions, not labelled: named by
# its relation only, so labelling imports nothing after it.
NOT_FOR_LABELLING = {"echomind_delivery__isnull": True}


def _assign_if_still_there(item_id: int) -> None:
    item = Item.objects.filter(pk=item_id, **NOT_FOR_LABELLING).first()
    if item is not None:
        assign_annotators(item)


def assign_waiting_items(limit: int | None = None) -> list[AssignmentResult]:
    """Assign annotators to every recorded item that has fewer than it needs; return what happened."""
    projects = list(AnnotationProject.objects.filter(active=True).prefetch_related("annotators"))
    # Items already holding the largest N any project asks for need nothing: skip them unlocked.
    most = max([project.annotators_per_item for project in projects] + [DEFAULT_ANNOTATORS_PER_ITEM])
    waiting = (
        Item.objects.waiting_for_labels()
        .filter(**NOT_FOR_LABELLING)
        .annotate(assigned=Count("annotations"))
        .filter(assigned__lt=most)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    item_ids = list(waiting[:limit] if limit else waiting)
    return assign_items(item_ids, projects=projects)


def assign_items(item_ids: Sequence[int], *, projects: Sequence[AnnotationProject]) -> list[AssignmentResult]:
    """Assign annotators to each item, balancing load across the whole batch."""
    pools: dict[int | None, list[int]] = {}
    loads = _Loads()
    results = []
    for item_id in item_ids:
        with transaction.atomic():
            # The item lock keeps two assignment runs (a sweep and a recording accepted at the same
            # moment) from both topping up the same item past its N.
            item = (
                Item.objects.waiting_for_labels()
                .select_for_update(of=("self",))
                .select_related("recording")
                .filter(pk=item_id)
                .first()
            )
            if item is None:
                continue
            project = project_for(item, projects)
            wanted = project.annotators_per_item if project else DEFAULT_ANNOTATORS_PER_ITEM
            key = project.pk if project else None
            if key not in pools:
                pools[key] = annotator_pool(project)
                loads.ensure(pools[key])
            existing = set(item.annotations.values_list("annotator_id", flat=True))
            exclude = set(existing)
            if item.recording is not None:
                exclude.add(item.recording.actor_id)  # nobody labels their own performance
            needed = max(0, wanted - len(existing))
            chosen = loads.pick(pools[key], exclude=exclude, count=needed)
            Annotation.objects.bulk_create([Annotation(item=item, annotator_id=user) for user in chosen])
            if item.state == Item.State.RECORDED and (chosen or existing):
                item.state = Item.State.ANNOTATING
                item.save(update_fields=["state", "updated_at"])
            results.append(AssignmentResult(item.pk, chosen, wanted=wanted, shortfall=needed - len(chosen)))
    return results
