"""Annotating an item: assigning annotators, autosaving drafts, submitting, reopening.

Every save names the version it was made from. Two tabs of the same annotation (or a laptop and
a desktop) race: whichever saves second, from an older version, is refused with StaleAnnotation
instead of silently overwriting the newer work. The row lock (`select_for_update`) makes the
compare-and-bump atomic on PostgreSQL; SQLite serialises writers anyway (IMMEDIATE transactions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.audio.suggestions import suggestions_from_features
from annotation.labelling.models import (
    DEFAULT_ANNOTATORS_PER_ITEM,
    Annotation,
    AnnotationProject,
    AnnotationRevision,
    MachineDraft,
    Strategy,
)
from annotation.labelling.schema import (
    TOM_SET_FIELDS,
    TOM_TEXT_FIELDS,
    LabelProblem,
    check_perception,
    check_tom,
    normalise_perception,
    normalise_tom,
    script_words,
)
from annotation.recording.assignment import Workload, pick_least_loaded
from annotation.recording.models import Item, Scenario
from webapp.models import User
from webapp.roles import Role


class LabellingError(Exception):
    """A save or submit that cannot be done; the message is written for the annotator."""


class StaleAnnotation(LabellingError):
    def __init__(self, current_version: int, your_version: int) -> None:
        self.current_version = current_version
        self.your_version = your_version
        super().__init__(
            f"Not saved: this annotation was saved from another tab or window (version {current_version}; "
            f"this page has version {your_version}). Reload the page to continue from the newest version."
        )


class AnnotationClosed(LabellingError):
    """The annotation is submitted (reopen it first) or its item already has a gold reference."""


class InvalidLabels(LabellingError):
    def __init__(self, problems: Sequence[LabelProblem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{problem.field}: {problem.message}" for problem in problems))


# --- Assignment -------------------------------------------------------------------------------------


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
    annotators = User.objects.filter(is_active=True, groups__name=Role.ANNOTATOR.label)
    if project is not None and project.annotators.exists():
        annotators = annotators.filter(pk__in=project.annotators.values("pk"))
    else:
        annotators = annotators.exclude(groups__name=Role.LEAD_ANNOTATOR.label)
    return sorted(set(annotators.values_list("pk", flat=True)))


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


def _assign_if_still_there(item_id: int) -> None:
    item = Item.objects.filter(pk=item_id).first()
    if item is not None:
        assign_annotators(item)


def assign_waiting_items(limit: int | None = None) -> list[AssignmentResult]:
    """Assign annotators to every recorded item that has fewer than it needs; return what happened."""
    projects = list(AnnotationProject.objects.filter(active=True).prefetch_related("annotators"))
    # Items already holding the largest N any project asks for need nothing: skip them unlocked.
    most = max([project.annotators_per_item for project in projects] + [DEFAULT_ANNOTATORS_PER_ITEM])
    waiting = (
        Item.objects.filter(state__in=[Item.State.RECORDED, Item.State.ANNOTATING])
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
                Item.objects.select_for_update(of=("self",))
                .select_related("recording")
                .filter(pk=item_id, state__in=[Item.State.RECORDED, Item.State.ANNOTATING])
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


# --- The annotator's queue --------------------------------------------------------------------------


def next_open_annotation(user: User, after: Annotation | None = None) -> Annotation | None:
    """Return the user's next open annotation (not `after`), or None when the queue is empty."""
    queue = Annotation.objects.open_queue_of(user)
    if after is not None:
        queue = queue.exclude(pk=after.pk)
    return queue.first()


# --- Drafting and submitting ------------------------------------------------------------------------


def latest_usable_draft(item: Item) -> MachineDraft | None:
    """Return the item's newest machine draft that has usable ToM fields."""
    return item.machine_drafts.filter(error="").order_by("-created_at", "-pk").first()


def open_annotation(annotation: Annotation) -> Annotation:
    """Start an assigned annotation: pre-fill acoustic suggestions and the machine draft, once."""
    if annotation.status != Annotation.Status.ASSIGNED:
        return annotation
    with transaction.atomic():
        locked = (
            Annotation.objects.select_for_update(of=("self",))
            .select_related("item__recording")
            .get(pk=annotation.pk)
        )
        if locked.status != Annotation.Status.ASSIGNED:
            return locked
        recording = locked.item.recording
        suggestions = suggestions_from_features(recording.features) if recording else {}
        draft = latest_usable_draft(locked.item)
        locked.perception = {**normalise_perception(locked.perception), **suggestions}
        locked.tom = normalise_tom(draft.tom if draft else locked.tom)
        locked.suggestions = suggestions
        locked.machine_draft = draft
        locked.status = Annotation.Status.DRAFT
        locked.version += 1
        locked.save(
            update_fields=[
                "perception",
                "tom",
                "suggestions",
                "machine_draft",
                "status",
                "version",
                "updated_at",
            ]
        )
        return locked


def save_draft(
    annotation_id: int,
    *,
    user: User,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    expected_version: int,
) -> Annotation:
    """Autosave the annotator's work in progress; raise StaleAnnotation when a newer save exists."""
    with transaction.atomic():
        annotation = _lock_and_label(annotation_id, user, expected_version, perception, tom, complete=False)
        annotation.status = Annotation.Status.DRAFT
        annotation.version += 1
        annotation.save(update_fields=["perception", "tom", "status", "version", "updated_at"])
        return annotation


def submit_annotation(
    annotation_id: int,
    *,
    user: User,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    expected_version: int,
) -> Annotation:
    """Submit complete labels, keep a revision, and record which drafted fields the annotator changed."""
    with transaction.atomic():
        annotation = _lock_and_label(annotation_id, user, expected_version, perception, tom, complete=True)
        annotation.changed_from_draft = changed_fields(annotation, annotation.perception, annotation.tom)
        annotation.status = Annotation.Status.SUBMITTED
        annotation.version += 1
        annotation.submitted_at = timezone.now()
        annotation.save(
            update_fields=[
                "perception",
                "tom",
                "changed_from_draft",
                "status",
                "version",
                "submitted_at",
                "updated_at",
            ]
        )
        AnnotationRevision.objects.create(
            annotation=annotation,
            version=annotation.version,
            perception=annotation.perception,
            tom=annotation.tom,
        )
        return annotation


def reopen_annotation(annotation_id: int, *, user: User, expected_version: int) -> Annotation:
    """Turn a submitted annotation back into a draft (its revisions stay) while the item has no gold."""
    with transaction.atomic():
        annotation = _lock_for_change(annotation_id, user, expected_version)
        if not annotation.is_submitted:
            return annotation
        annotation.status = Annotation.Status.DRAFT
        annotation.version += 1
        annotation.save(update_fields=["status", "version", "updated_at"])
        return annotation


def _lock_for_change(annotation_id: int, user: User, expected_version: int) -> Annotation:
    annotation = (
        Annotation.objects.select_for_update(of=("self",))
        .select_related("item", "machine_draft")
        .get(pk=annotation_id, annotator=user)
    )
    if annotation.version != expected_version:
        raise StaleAnnotation(annotation.version, expected_version)
    if annotation.item.state == Item.State.GOLD:
        raise AnnotationClosed("This item already has a gold reference; its annotations are closed.")
    return annotation


def _lock_and_label(
    annotation_id: int,
    user: User,
    expected_version: int,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    *,
    complete: bool,
) -> Annotation:
    """Lock an open annotation (the caller holds the transaction) and put the checked labels on it,
    unsaved; `complete` labels are a submit, others a draft save."""
    annotation = _lock_for_change(annotation_id, user, expected_version)
    if annotation.is_submitted:
        # A draft save is told how to change a submitted annotation; a second submit needs no advice.
        raise AnnotationClosed(
            "Already submitted." if complete else "Already submitted: reopen the annotation to change it."
        )
    annotation.perception, annotation.tom = checked_labels(
        annotation.item, perception, tom, complete=complete
    )
    return annotation


def checked_labels(
    item: Item, perception: Mapping[str, Any], tom: Mapping[str, Any], *, complete: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the documents normalised, or raise InvalidLabels listing every problem for this item."""
    perception_doc, tom_doc = normalise_perception(perception), normalise_tom(tom)
    problems = check_perception(
        perception_doc,
        emotion_shift=item.scenario == Scenario.EMOTION_SHIFT,
        words=script_words(item.text),
        complete=complete,
    )
    problems += check_tom(
        tom_doc, strategy_slugs=set(Strategy.objects.values_list("slug", flat=True)), complete=complete
    )
    if problems:
        raise InvalidLabels(problems)
    return perception_doc, tom_doc


def changed_fields(
    annotation: Annotation, perception: Mapping[str, Any], tom: Mapping[str, Any]
) -> list[str]:
    """Return the fields ("tom.latent_need", "perception.pitch") whose final value differs from
    what the machine draft or the acoustic analysis suggested."""
    changed = []
    for name, suggested in annotation.suggestions.items():
        if perception.get(name) != suggested:
            changed.append(f"perception.{name}")
    draft = annotation.machine_draft
    if draft is not None:
        drafted = normalise_tom(draft.tom)
        for name in TOM_TEXT_FIELDS:
            if " ".join(str(tom.get(name, "")).split()) != " ".join(str(drafted[name]).split()):
                changed.append(f"tom.{name}")
        for name in TOM_SET_FIELDS:
            if set(tom.get(name, [])) != set(drafted[name]):
                changed.append(f"tom.{name}")
    return changed
