"""compare_and_set: a conditional write keeps its conditions on the rows it writes, or is refused."""

from __future__ import annotations

import pytest
from django.db.models import Exists, OuterRef

from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.factories import AnnotationFactory
from webapp.db import compare_and_set


def test_a_condition_through_a_join_is_refused_before_anything_is_written(db: None) -> None:
    annotation = AnnotationFactory.create()
    through_a_join = Annotation.objects.filter(pk=annotation.pk).exclude(item__state=Item.State.GOLD)
    with pytest.raises(ValueError, match="joins another table"):
        compare_and_set(through_a_join, version=99)
    annotation.refresh_from_db()
    assert annotation.version != 99


def test_an_exists_over_the_row_stays_on_the_row_and_writes(db: None) -> None:
    annotation = AnnotationFactory.create()
    start = annotation.version
    gold = Exists(Item.objects.filter(pk=OuterRef("item_id"), state=Item.State.GOLD))
    rows = Annotation.objects.filter(pk=annotation.pk, version=start).exclude(gold)
    assert compare_and_set(rows, version=start + 1) == 1
    assert compare_and_set(rows, version=start + 2) == 0  # the version it was read at is gone
    annotation.refresh_from_db()
    assert annotation.version == start + 1
