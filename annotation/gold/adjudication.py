"""Turning an item's submitted annotations into its gold reference: adjudication and fast-track.

Gold references are versioned: each adjudication adds a version and makes it current, keeping the
older ones with who made them and when. Two leads adjudicating the same item at once race; the
form carries the gold version it was made from and the item row is locked, so the second save
is refused (StaleGold) instead of replacing a reference its author never saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Prefetch, Q, QuerySet

from annotation.gold.models import GoldReference
from annotation.labelling.comparison import (
    FieldComparison,
    Labels,
    categorical_fields_agree,
    compare_labels,
    labels_agree_on_categories,
    proposed_labels,
)
from annotation.labelling.models import Annotation
from annotation.labelling.schema import script_words
from annotation.labelling.workflows import LabellingError, checked_labels
from annotation.recording.models import Item
from webapp.models import User


class StaleGold(LabellingError):
    def __init__(self, current_version: int, your_version: int) -> None:
        self.current_version = current_version
        super().__init__(
            f"Not saved: another lead saved gold version {current_version} of this item while this page "
            f"showed version {your_version}. Reload to see it before adjudicating again."
        )


class NotReady(LabellingError):
    """The item has no submitted annotations yet, or some are still being worked on."""


class NotFastTrackable(LabellingError):
    """The annotators disagree on a categorical field; the item needs a full adjudication."""


def submitted_annotations() -> QuerySet[Annotation]:
    """Return submitted annotations with their annotators, in submission order."""
    return (
        Annotation.objects.filter(status=Annotation.Status.SUBMITTED)
        .select_related("annotator")
        .order_by("submitted_at", "pk")
    )


def items_ready_for_adjudication() -> QuerySet[Item]:
    """Return items being annotated whose every assigned annotation is submitted."""
    return (
        Item.objects.filter(state=Item.State.ANNOTATING)
        .annotate(
            n_assigned=Count("annotations"),
            n_submitted=Count("annotations", filter=Q(annotations__status=Annotation.Status.SUBMITTED)),
        )
        .filter(n_submitted__gte=1, n_submitted=F("n_assigned"))
        .order_by("pk")
    )


def with_submitted_annotations(items: QuerySet[Item]) -> QuerySet[Item]:
    """Prefetch each item's submitted annotations as `item.submitted` (one query for a page)."""
    return items.prefetch_related(
        Prefetch("annotations", queryset=submitted_annotations(), to_attr="submitted")
    )


@dataclass(frozen=True)
class ItemComparison:
    item: Item
    annotations: list[Annotation]
    fields: list[FieldComparison]
    fast_trackable: bool
    proposal: Labels


def fast_trackable(annotations: list[Annotation]) -> bool:
    """Return True when an item's submitted annotations agree on every categorical field."""
    return labels_agree_on_categories(
        [Labels(annotation.perception, annotation.tom) for annotation in annotations]
    )


def compare_item(item: Item, annotations: list[Annotation]) -> ItemComparison:
    """Return the side-by-side comparison of an item's submitted annotations and a proposed gold."""
    if not annotations:
        raise NotReady("No annotation of this item has been submitted yet.")
    fields = compare_labels(
        [Labels(annotation.perception, annotation.tom) for annotation in annotations], script_words(item.text)
    )
    return ItemComparison(
        item=item,
        annotations=annotations,
        fields=fields,
        fast_trackable=len(annotations) >= 2 and categorical_fields_agree(fields),
        proposal=proposed_labels(fields),
    )


def current_gold(item: Item) -> GoldReference | None:
    """Return the item's current gold reference, if it has one."""
    return item.gold_references.filter(is_current=True).select_related("adjudicated_by").first()


def adjudicate_item(
    item_id: int,
    *,
    lead: User,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    expected_gold_version: int,
    reference_response: str = "",
    note: str = "",
) -> GoldReference:
    """Save the lead's choices as the item's new current gold reference; the item becomes gold."""
    with transaction.atomic():
        item = Item.objects.select_for_update().get(pk=item_id)
        perception_doc, tom_doc = checked_labels(item, perception, tom, complete=True)
        return _save_gold(
            item, lead, perception_doc, tom_doc, expected_gold_version, reference_response, note
        )


def fast_track_item(item_id: int, *, lead: User, expected_gold_version: int) -> GoldReference:
    """Save the proposed gold of an item whose annotators agree on every categorical field."""
    with transaction.atomic():
        item = Item.objects.select_for_update().get(pk=item_id)
        annotations = list(submitted_annotations().filter(item=item))
        comparison = compare_item(item, annotations)
        if not comparison.fast_trackable:
            raise NotFastTrackable("The annotators disagree on a categorical field: adjudicate it in full.")
        proposal = comparison.proposal
        return _save_gold(
            item,
            lead,
            dict(proposal.perception),
            dict(proposal.tom),
            expected_gold_version,
            reference_response="",
            note="",
            fast_tracked=True,
        )


def _save_gold(
    item: Item,
    lead: User,
    perception: dict[str, Any],
    tom: dict[str, Any],
    expected_gold_version: int,
    reference_response: str,
    note: str,
    *,
    fast_tracked: bool = False,
) -> GoldReference:
    """Add a gold version to a locked item; the caller holds the transaction."""
    if item.state not in (Item.State.ANNOTATING, Item.State.GOLD):
        raise NotReady("This item is not being annotated.")
    previous = item.gold_references.filter(is_current=True).first()
    current_version = previous.version if previous else 0
    if current_version != expected_gold_version:
        raise StaleGold(current_version, expected_gold_version)
    annotations = list(item.annotations.all())
    if not annotations or any(not annotation.is_submitted for annotation in annotations):
        raise NotReady("Some annotations of this item are not submitted yet.")
    latest = item.gold_references.order_by("-version").values_list("version", flat=True).first() or 0
    item.gold_references.filter(is_current=True).update(is_current=False)
    gold = GoldReference.objects.create(
        item=item,
        version=latest + 1,
        perception=perception,
        tom=tom,
        reference_response=reference_response,
        note=note,
        adjudicated_by=lead,
        fast_tracked=fast_tracked,
        is_current=True,
    )
    gold.source_annotations.set(annotations)
    if item.state != Item.State.GOLD:
        item.state = Item.State.GOLD
        item.save(update_fields=["state", "updated_at"])
    return gold
