"""The gold queries written once: an item's current gold, gold by item, a new current version, readiness."""

from __future__ import annotations

import pytest
from django.db.models import Q

from annotation.gold.models import GoldReference
from annotation.labelling.models import (
    Annotation,
    is_ready_for_gold,
    items_ready_for_gold,
    items_still_annotating,
)
from annotation.recording.models import Item
from tests.factories import AnnotationFactory, GoldReferenceFactory, RecordedItemFactory

pytestmark = pytest.mark.django_db


def gold_item() -> Item:
    """A recorded item with gold version 1, current."""
    item = RecordedItemFactory.create(state=Item.State.GOLD)
    GoldReferenceFactory.create(item=item)
    return item


def test_current_of_returns_the_newest_version_only() -> None:
    item = gold_item()
    GoldReference.objects.filter(item=item).update(is_current=False)
    newest = GoldReferenceFactory.create(item=item, version=2)

    assert GoldReference.objects.current_of(item) == newest
    assert GoldReference.objects.current_of(item.pk) == newest
    assert list(GoldReference.objects.current()) == [newest]
    assert [gold.version for gold in GoldReference.objects.history_of(item)] == [2, 1]


def test_current_of_an_item_without_gold_is_none() -> None:
    assert GoldReference.objects.current_of(RecordedItemFactory.create()) is None


def test_current_by_item_and_current_exists_skip_items_without_gold() -> None:
    with_gold, without = gold_item(), RecordedItemFactory.create()

    golds = GoldReference.objects.current_by_item([with_gold.pk, without.pk])

    assert set(golds) == {with_gold.pk}
    assert list(Item.objects.filter(GoldReference.objects.current_exists("pk"))) == [with_gold]


def test_add_current_version_follows_the_newest_and_demotes_the_old() -> None:
    item = gold_item()

    second = GoldReference.objects.add_current_version(item, perception={"emotion": "sad"})
    jumped = GoldReference.objects.add_current_version(item, at_least=7)

    assert (second.version, jumped.version) == (2, 7)
    assert list(GoldReference.objects.filter(item=item, is_current=True)) == [jumped]


def test_an_item_is_ready_for_gold_when_every_assigned_annotation_is_submitted() -> None:
    ready, half, untouched = (RecordedItemFactory.create(state=Item.State.ANNOTATING) for _ in range(3))
    for item, statuses in (
        (ready, ["submitted", "submitted"]),
        (half, ["submitted", "draft"]),
        (untouched, []),
    ):
        for status in statuses:
            AnnotationFactory.create(item=item, status=status)

    assert list(items_ready_for_gold()) == [ready]
    assert list(items_still_annotating()) == [half, untouched]
    assert is_ready_for_gold(list(ready.annotations.all()))
    assert not is_ready_for_gold(list(half.annotations.all()))
    assert not is_ready_for_gold([])


def test_submitted_and_open_annotations() -> None:
    item = RecordedItemFactory.create(state=Item.State.ANNOTATING)
    done = AnnotationFactory.create(item=item, status=Annotation.Status.SUBMITTED)
    draft = AnnotationFactory.create(item=item, status=Annotation.Status.DRAFT)

    assert list(Annotation.objects.submitted()) == [done]
    assert list(Annotation.objects.open()) == [draft]
    assert list(Annotation.objects.open_queue_of(draft.annotator)) == [draft]
    assert list(Annotation.objects.submitted_by(done.annotator)) == [done]
    assert not Annotation.objects.filter(~Q(pk__in=[done.pk, draft.pk])).exists()


def test_an_annotators_open_queue_leaves_out_items_that_reached_gold() -> None:
    annotation = AnnotationFactory.create(item=gold_item(), status=Annotation.Status.DRAFT)

    assert not Annotation.objects.open_queue_of(annotation.annotator).exists()
