"""Adjudicated gold references: one versioned reference per item, the newest current."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, models
from django.db.models import Exists, OuterRef

from annotation.labelling.models import Annotation
from annotation.recording.current_gold import CurrentGold, register_current_gold_reader
from annotation.recording.models import Item
from webapp import audit
from webapp.fixed_reads import INTEGER, FixedRead
from webapp.models import Archivable, ArchivableQuerySet, User

# What a gold version's audit entry shows of it, and of the version it replaced.
GOLD_AUDIT_FIELDS = (
    "version",
    "perception",
    "tom",
    "cross_turn",
    "reference_response",
    "note",
    "adjudicated_by",
)


class GoldReferenceQuerySet(ArchivableQuerySet["GoldReference"]):
    def current(self) -> GoldReferenceQuerySet:
        """Return only current references in use (one per item at most: the newest version; none
        while that version, or its item, is archived)."""
        return self.in_use("item").filter(is_current=True)

    def current_of(self, item: Item | int) -> GoldReference | None:
        """Return the item's current gold reference (with who adjudicated it), or None."""
        item_id = item.pk if isinstance(item, Item) else item
        if self.query.has_filters() or self.db != DEFAULT_DB_ALIAS:  # a narrowed queryset: the ORM reads it
            return _current_of_rows(self, item_id).first()
        # Asked of `GoldReference.objects` on every item page and API read: compiled once.
        found = _CURRENT_OF_READ.read(item_id=item_id)
        return found[0] if found else None

    def current_by_item(self, item_ids: Any) -> dict[int, GoldReference]:
        """Return {item id: current gold reference} for the given items (ids, items or a queryset)."""
        return {gold.item_id: gold for gold in self.current().filter(item__in=item_ids)}

    def current_exists(self, item_ref: str = "item_id") -> Exists:
        """Return an `Exists` that is true when the outer row's item (`item_ref`) has current gold."""
        return Exists(self.current().filter(item_id=OuterRef(item_ref)))

    def history_of(self, item: Item) -> GoldReferenceQuerySet:
        """Return every version of the item's gold, newest first."""
        return self.filter(item=item).select_related("adjudicated_by").order_by("-version")

    def add_current_version(
        self, item: Item, *, actor: User | None = None, at_least: int = 0, **fields: Any
    ) -> GoldReference:
        """Add a gold version of the item after its newest one (or `at_least`) and make it current,
        with its audit entry (`actor`: the lead adjudicating, or the admin importing).

        Call inside a transaction holding the item's row lock: two saves of one item at once
        would otherwise both read the same newest version and collide on it.
        """
        previous = self.filter(item=item, is_current=True).first()
        latest = self.filter(item=item).order_by("-version").values_list("version", flat=True).first() or 0
        self.filter(item=item, is_current=True).update(is_current=False)
        gold = self.create(item=item, version=max(latest + 1, at_least), is_current=True, **fields)
        audit.record(
            actor=actor,
            action=audit.GOLD_VERSION,
            obj=gold,
            before=audit.fields_of(previous, *GOLD_AUDIT_FIELDS) if previous else None,
            after=audit.fields_of(gold, *GOLD_AUDIT_FIELDS),
        )
        return gold


class GoldReference(Archivable):
    """The adjudicated reference for an item; versioned, the newest is current."""

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="gold_references")
    version = models.PositiveIntegerField()
    perception = models.JSONField(default=dict)
    tom = models.JSONField(default=dict)
    # A later dialogue turn's cross-turn gold ({} otherwise): annotation.labelling.dialogue.cross_turn.
    cross_turn = models.JSONField(default=dict, blank=True, db_default={})
    reference_response = models.TextField(blank=True, help_text="An empathetic reference reply, if any")
    adjudicated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    fast_tracked = models.BooleanField(default=False)
    imported = models.BooleanField(
        default=False, help_text="Came from an imported dataset, not adjudicated here"
    )
    note = models.TextField(blank=True, help_text="The lead's reasoning, for later readers")
    override_reason = models.TextField(
        blank=True,
        help_text="Why an admin saved this version where no lead may (see gold.access.adjudication_refusal)",
    )
    source_annotations = models.ManyToManyField(Annotation, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    is_current = models.BooleanField(default=True, db_index=True)

    objects = GoldReferenceQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "version"], name="gold_version_unique"),
            models.UniqueConstraint(
                fields=["item"], condition=models.Q(is_current=True), name="one_current_gold_per_item"
            ),
        ]
        ordering = ["item", "-version"]

    def __str__(self) -> str:
        return f"gold v{self.version} of {self.item_id}"


def _current_gold_for_earlier_layers(item_ids: list[int]) -> dict[int, CurrentGold]:
    golds = GoldReference.objects.only("item_id", "reference_response", "perception").current_by_item(
        item_ids
    )
    return {
        item_id: CurrentGold(
            reference_response=gold.reference_response or "", perception=gold.perception or {}
        )
        for item_id, gold in golds.items()
    }


register_current_gold_reader(_current_gold_for_earlier_layers)


def _current_of_rows(rows: GoldReferenceQuerySet, item_id: int) -> GoldReferenceQuerySet:
    return rows.current().filter(item_id=item_id).select_related("adjudicated_by")


def _first_current_of(item_id: int) -> GoldReferenceQuerySet:
    rows = _current_of_rows(GoldReference.objects.all(), item_id)
    return (rows if rows.ordered else rows.order_by("pk"))[:1]  # as `.first()` reads it


# The same SQL on every call but for the item's id (`webapp.fixed_reads`, issue 46).
_CURRENT_OF_READ: FixedRead[GoldReference] = FixedRead(_first_current_of, item_id=INTEGER)
