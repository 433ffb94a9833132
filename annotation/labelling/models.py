"""Perception and Theory-of-Mind annotations, machine drafts, and adjudicated gold references.

Label payloads are JSON documents with one shared shape (see `annotation.labelling.schema`), so the
evaluation judges and the training datasets read gold references without knowing about forms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import connection, models
from django.db.models import Count, Exists, F, Func, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL

from annotation.recording.models import Item
from webapp.models import Archivable, ArchivableQuerySet, in_use_filter

if TYPE_CHECKING:
    from webapp.models import User

DEFAULT_ANNOTATORS_PER_ITEM = 3


class AnnotationProject(models.Model):
    """How many annotators label the items a project covers, and who may be assigned.

    A project covers items by split and scenario rather than by listing them, so ten thousand
    items need no picking; an item belongs to the first active project (by priority) covering
    it, and items no project covers get DEFAULT_ANNOTATORS_PER_ITEM from the whole pool.
    """

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    annotators_per_item = models.PositiveSmallIntegerField(
        default=DEFAULT_ANNOTATORS_PER_ITEM, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    splits = models.JSONField(default=list, blank=True, help_text="Splits covered; empty covers every split")
    scenarios = models.JSONField(
        default=list, blank=True, help_text="Scenarios covered; empty covers every scenario"
    )
    annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="annotation_projects",
        help_text="Who may be assigned; empty means every annotator (lead annotators only when listed)",
    )
    priority = models.PositiveIntegerField(default=100, help_text="Lower numbers are matched first")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["priority", "pk"]

    def __str__(self) -> str:
        return self.name

    def covers(self, item: Item) -> bool:
        """Return True when the item's split and scenario fall under this project."""
        return (not self.splits or item.split in self.splits) and (
            not self.scenarios or item.scenario in self.scenarios
        )


class Strategy(models.Model):
    """One emotional-support strategy of the taxonomy admins manage (e.g. emotional validation)."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    active = models.BooleanField(default=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "name"]
        verbose_name_plural = "strategies"

    def __str__(self) -> str:
        return self.name


_STRATEGY_COLUMNS = ("id", "slug", "name", "description", "active", "position")


def every_strategy() -> RawSQL:
    """Return every strategy as one JSON array in the taxonomy's order (`Strategy.Meta.ordering`),
    a scalar subquery for a read the page makes anyway (`strategies_read_with`), so the taxonomy
    costs no round trip of its own (issue 27)."""
    table = connection.ops.quote_name(Strategy._meta.db_table)
    pairs = ", ".join(f"'{column}', {connection.ops.quote_name(column)}" for column in _STRATEGY_COLUMNS)
    order = ", ".join(connection.ops.quote_name(column) for column in _strategy_order())
    if connection.vendor == "postgresql":
        sql = f"SELECT JSONB_AGG(JSONB_BUILD_OBJECT({pairs}) ORDER BY {order}) FROM {table}"
    else:  # SQLite: ordered in Python (`strategies_read_with`), as BINARY collation orders text
        sql = f"SELECT JSON_GROUP_ARRAY(JSON_OBJECT({pairs})) FROM {table}"
    return RawSQL(sql, [], output_field=models.JSONField())


def strategies_read_with(row: models.Model, name: str = "strategies") -> list[Strategy] | None:
    """Return the strategies `every_strategy` read onto `row` as `name`, in order; None when the
    row was read without them."""
    if name not in vars(row):
        return None
    documents = vars(row)[name] or []  # no strategy at all: PostgreSQL aggregates no row to NULL
    strategies = [Strategy(**{**document, "active": bool(document["active"])}) for document in documents]
    if connection.vendor != "postgresql":
        strategies.sort(key=lambda strategy: tuple(getattr(strategy, column) for column in _strategy_order()))
    return strategies


def _strategy_order() -> list[str]:
    return list(Strategy._meta.ordering or [])  # plain ascending columns: ["position", "name"]


class AnnotationQuerySet(ArchivableQuerySet["Annotation"]):
    def submitted(self) -> AnnotationQuerySet:
        """Return submitted annotations with their annotators, in submission order."""
        return (
            self.in_use()
            .filter(status=Annotation.Status.SUBMITTED)
            .select_related("annotator")
            .order_by("submitted_at", "pk")
        )

    def lock_item_of(self, annotation_id: int) -> int | None:
        """Lock the item an annotation belongs to, before the annotation (ItemQuerySet's order); return its id."""
        return Item.objects.lock_if_exists(Subquery(self.filter(pk=annotation_id).values("item_id")))

    def open(self) -> AnnotationQuerySet:
        """Return annotations still to be submitted (assigned, or a draft in progress)."""
        return self.filter(status__in=Annotation.OPEN_STATUSES)

    def open_queue_of(self, annotator: User | OuterRef) -> AnnotationQuerySet:
        """Return the annotator's open queue: their unsubmitted work on items without gold, oldest first."""
        # NOT EXISTS, not a join: counting the queue then probes the few gold items instead of
        # walking every item (an anti-join through the item state index).
        on_gold = Exists(Item.objects.filter(pk=OuterRef("item_id"), state=Item.State.GOLD))
        return (
            self.filter(Q(annotator=annotator))  # Q: the stubs' lookup types know no OuterRef
            .open()
            .in_use("item")
            .filter(~on_gold)
            .select_related("item")
            .order_by("assigned_at", "pk")
        )

    def submitted_by(self, annotator: User | OuterRef) -> AnnotationQuerySet:
        """Return the annotations the annotator has submitted, latest first."""
        return (
            self.filter(Q(annotator=annotator), status=Annotation.Status.SUBMITTED)
            .select_related("item")
            .order_by("-submitted_at", "-pk")
        )


def tab_counts(annotator: User | OuterRef) -> dict[str, Subquery]:
    """Return `open_count` and `submitted_count`, the sizes of the annotator's two tabs, as scalar
    subqueries to annotate onto a read the page makes anyway (`annotator`: OuterRef to that read's
    annotator id, or the annotator, whose counts the database then computes once for the read):
    each an index-only count over its queue's partial index, no query of its own."""
    return {
        "open_count": _count(Annotation.objects.open_queue_of(annotator)),
        "submitted_count": _count(Annotation.objects.submitted_by(annotator)),
    }


def counted_tabs(row: models.Model) -> tuple[int, int]:
    """Return (open, submitted): the counts `tab_counts` annotated onto a row that was read."""
    annotated = vars(row)
    return annotated["open_count"], annotated["submitted_count"]


def _count(rows: QuerySet[Annotation]) -> Subquery:
    # COUNT as a plain function, not an aggregate: no GROUP BY, so an empty queue counts 0, not NULL.
    counted = rows.order_by().annotate(rows_counted=Func("pk", function="COUNT")).values("rows_counted")
    return Subquery(counted, output_field=IntegerField())


class Annotation(Archivable):
    """One annotator's labels for one item: a draft while they work, then submitted."""

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"

    OPEN_STATUSES = (Status.ASSIGNED, Status.DRAFT)

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="annotations")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotations"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ASSIGNED, db_index=True)
    perception = models.JSONField(default=dict, blank=True)
    tom = models.JSONField(default=dict, blank=True)
    # Later dialogue turns only ({} otherwise): annotation.labelling.dialogue.cross_turn.
    cross_turn = models.JSONField(default=dict, blank=True, db_default={})
    version = models.PositiveIntegerField(default=0, help_text="Bumped on every save; guards stale saves")
    # The browser tab (its page-session id, kept in sessionStorage over reloads) whose save made
    # `version`: a later save from that same tab is its own echo, not another tab's (issue 41).
    saved_from = models.CharField(max_length=40, blank=True, default="", db_default="")
    changed_from_draft = models.JSONField(
        default=list, blank=True, help_text="Fields the annotator changed from the machine draft"
    )
    machine_draft = models.ForeignKey(
        "MachineDraft", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The perception draft read from a TextGrid or EAF file the annotation started from (None: none).
    tier_draft = models.ForeignKey(
        "MachineDraft", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    suggestions = models.JSONField(
        default=dict, blank=True, help_text="Acoustic suggestions the perception fields started from"
    )
    assigned_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="one_annotation_per_annotator")
        ]
        # One narrow index per list, in the list's order, so a page is a range scan of the
        # annotator's own rows and its cost does not grow with the number of items (issue 14).
        indexes = [
            models.Index(
                fields=["annotator", "assigned_at", "id"],
                include=["item"],  # covering: the queue's count never reads the table
                condition=Q(status__in=["assigned", "draft"]),  # OPEN_STATUSES
                name="annotation_open_queue",
            ),
            models.Index(
                fields=["annotator", "submitted_at", "id"],
                condition=Q(status="submitted"),
                name="annotation_submitted_list",
            ),
            models.Index(fields=["annotator", "id"], name="annotation_by_annotator"),
        ]
        ordering = ["assigned_at"]

    def __str__(self) -> str:
        return f"annotation of {self.item_id} by {self.annotator_id} ({self.status})"

    @property
    def is_submitted(self) -> bool:
        """Return True once the annotator has submitted (their labels are final until reopened)."""
        return self.status == self.Status.SUBMITTED


class AnnotationRevision(Archivable):
    """A snapshot of an annotation at each submit, so submitted work keeps its history."""

    annotation = models.ForeignKey(Annotation, on_delete=models.PROTECT, related_name="revisions")
    version = models.PositiveIntegerField()
    perception = models.JSONField(default=dict)
    tom = models.JSONField(default=dict)
    cross_turn = models.JSONField(default=dict, blank=True, db_default={})
    saved_at = models.DateTimeField(auto_now_add=True)

    objects = ArchivableQuerySet["AnnotationRevision"].as_manager()

    class Meta:
        ordering = ["annotation", "version"]

    def __str__(self) -> str:
        return f"revision {self.version} of annotation {self.annotation_id}"


# The prompt_version of a draft read from a Praat TextGrid or ELAN file (`tier_import`), not an LLM.
TIER_FILE_DRAFT = "tier-file-v1"


class MachineDraft(models.Model):
    """ToM fields drafted by an LLM for an item, or perception fields read from a tier file
    (prompt_version TIER_FILE_DRAFT), kept apart from human work: never a submitted annotation."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="machine_drafts")
    model_name = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=64)
    tom = models.JSONField(default=dict)
    # The perception fields a tier file labels (stressed_words, intonation, emotion_segments).
    perception = models.JSONField(default=dict, blank=True)
    raw_text = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"draft of {self.item_id} by {self.model_name}"

    @property
    def ok(self) -> bool:
        """Return True when the model answered with usable ToM fields."""
        return not self.error


# --- When an item is ready for gold ---------------------------------------------------------------


_IN_USE = in_use_filter(prefix="annotations__")
_SUBMITTED = Q(annotations__status=Annotation.Status.SUBMITTED) & _IN_USE


def is_ready_for_gold(annotations: Sequence[Annotation]) -> bool:
    """Return True when an item's annotations (all of them) make it ready for gold.

    The rule, here and in `items_ready_for_gold`: at least one annotation, and every assigned
    annotation submitted. A lead never adjudicates around an annotator still at work.
    """
    return bool(annotations) and all(annotation.is_submitted for annotation in annotations)


def items_ready_for_gold() -> QuerySet[Item]:
    """Return items being annotated that are ready for gold (see `is_ready_for_gold`), by id."""
    return (
        Item.objects.in_use()
        .filter(state=Item.State.ANNOTATING)
        .annotate(
            n_assigned=Count("annotations", filter=_IN_USE),
            n_submitted=Count("annotations", filter=_SUBMITTED),
        )
        .filter(n_submitted__gte=1, n_submitted=F("n_assigned"))
        .order_by("pk")
    )


def items_still_annotating() -> QuerySet[Item]:
    """Return items being annotated that are not ready for gold yet, by id."""
    return (
        Item.objects.in_use()
        .filter(state=Item.State.ANNOTATING)
        .annotate(
            n_assigned=Count("annotations", filter=_IN_USE),
            n_submitted=Count("annotations", filter=_SUBMITTED),
        )
        .exclude(n_submitted=F("n_assigned"), n_submitted__gte=1)
        .order_by("pk")
    )
