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
from django.db.models import Prefetch, QuerySet

from annotation.gold.access import adjudication_refusal
from annotation.gold.models import GoldReference
from annotation.labelling.checking import LabellingError, checked_documents
from annotation.labelling.comparison import (
    FieldComparison,
    Labels,
    compare_labels,
    labels_agree_on_categories,
    proposed_labels,
)
from annotation.labelling.models import Annotation, is_ready_for_gold
from annotation.labelling.schema import script_words
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


class NotYoursToAdjudicate(LabellingError):
    """The user may not save gold for this item (`gold.access.adjudication_refusal` says why)."""


def with_submitted_annotations(items: QuerySet[Item]) -> QuerySet[Item]:
    """Prefetch each item's submitted annotations as `item.submitted` (one query for a page)."""
    return items.prefetch_related(
        Prefetch("annotations", queryset=Annotation.objects.submitted(), to_attr="submitted")
    )


@dataclass(frozen=True)
class ItemComparison:
    item: Item
    annotations: list[Annotation]
    fields: list[FieldComparison]
    fast_trackable: bool
    proposal: Labels


def fast_trackable(annotations: list[Annotation]) -> bool:
    """Return True when an item may be fast-tracked to gold without a full adjudication.

    The fast-track rule, decided here only (the queue's button, the adjudication page and
    `fast_track_item` all ask this): two or more submitted annotations that agree on every
    categorical field (`comparison.FAST_TRACK_FIELDS`).
    """
    return labels_agree_on_categories(
        [Labels(annotation.perception, annotation.tom, annotation.cross_turn) for annotation in annotations]
    )


def compare_item(item: Item, annotations: list[Annotation]) -> ItemComparison:
    """Return the side-by-side comparison of an item's submitted annotations and a proposed gold."""
    if not annotations:
        raise NotReady("No annotation of this item has been submitted yet.")
    fields = compare_labels(
        [Labels(annotation.perception, annotation.tom, annotation.cross_turn) for annotation in annotations],
        script_words(item.text),
    )
    return ItemComparison(
        item=item,
        annotations=annotations,
        fields=fields,
        fast_trackable=fast_trackable(annotations),
        proposal=proposed_labels(fields),
    )


def adjudicate_item(
    item_id: int,
    *,
    lead: User,
    perception: Mapping[str, Any],
    tom: Mapping[str, Any],
    expected_gold_version: int,
    reference_response: str = "",
    note: str = "",
    override_reason: str = "",
    cross_turn: Mapping[str, Any] | None = None,
) -> GoldReference:
    """Save the lead's choices as the item's new current gold reference; the item becomes gold.

    `override_reason`: an admin saving gold where no lead may (the leads labelled the item) says why.
    `cross_turn`: a later dialogue turn's cross-turn gold, required there as on the workbench.
    """
    with transaction.atomic():
        # The race: two leads save gold for one item at once. Unlocked, both would read the same
        # current version and both add a "current" gold on top of it. With the item locked the
        # second waits, then finds the version moved on and is refused (StaleGold in _save_gold).
        item = Item.objects.lock(item_id)
        documents = checked_documents(item, perception, tom, cross_turn, complete=True)
        return _save_gold(
            item,
            lead,
            documents.perception,
            documents.tom,
            expected_gold_version,
            reference_response,
            note,
            override_reason=override_reason.strip(),
            cross_turn=documents.cross_turn,
        )


def fast_track_item(item_id: int, *, lead: User, expected_gold_version: int) -> GoldReference:
    """Save the proposed gold of an item whose annotators agree on every categorical field."""
    with transaction.atomic():
        # The same race as adjudicate_item (two leads saving gold for one item at once, here a
        # fast-track against a full adjudication or a second fast-track): the item lock makes the
        # second wait and then be refused as stale.
        item = Item.objects.lock(item_id)
        annotations = list(Annotation.objects.submitted().filter(item=item).select_for_update(of=("self",)))
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
            cross_turn=dict(proposal.cross_turn),
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
    override_reason: str = "",
    cross_turn: dict[str, Any] | None = None,
) -> GoldReference:
    """Add a gold version to a locked item; the caller holds the transaction."""
    if (refusal := adjudication_refusal(lead, item, override_reason=override_reason)) is not None:
        raise NotYoursToAdjudicate(refusal)
    if item.state not in (Item.State.ANNOTATING, Item.State.GOLD):
        raise NotReady("This item is not being annotated.")
    previous = GoldReference.objects.current_of(item)
    current_version = previous.version if previous else 0
    if current_version != expected_gold_version:
        raise StaleGold(current_version, expected_gold_version)
    # Locked after the item, as every workflow does: a reopen waiting on the item now sees the gold.
    annotations = list(item.annotations.in_use().select_for_update(of=("self",)))
    if not is_ready_for_gold(annotations):
        raise NotReady("Some annotations of this item are not submitted yet.")
    gold = GoldReference.objects.add_current_version(
        item,
        actor=lead,
        perception=perception,
        tom=tom,
        cross_turn=cross_turn or {},
        reference_response=reference_response,
        note=note,
        adjudicated_by=lead,
        fast_tracked=fast_tracked,
        override_reason=override_reason,
    )
    gold.source_annotations.set(annotations)
    if item.state != Item.State.GOLD:
        item.state = Item.State.GOLD
        item.save(update_fields=["state", "updated_at"])
    return gold
