"""Autosave's UPDATE written out for PostgreSQL writes exactly what the ORM's conditional UPDATE
writes, and refuses exactly what it refuses: a stale version, a submitted annotation, a gold item."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db.models import Model
from django.utils import timezone

from annotation.labelling import workflows
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.conftest import only_on_postgresql
from webapp.db import compare_and_set

pytestmark = pytest.mark.django_db

FIELDS = ("saved_from", "perception", "tom", "cross_turn", "status", "version", "updated_at")


def _by_orm(annotation: Annotation, version: int, tab: str, now: object) -> bool:
    return bool(
        compare_and_set(
            workflows._still_open(annotation, version),
            saved_from=tab,
            perception=annotation.perception,
            tom=annotation.tom,
            cross_turn=annotation.cross_turn,
            status=Annotation.Status.DRAFT,
            version=version + 1,
            updated_at=now,
        )
    )


def _nothing(annotation: Annotation) -> None:
    pass


def _submitted(annotation: Annotation) -> None:
    Annotation.objects.filter(pk=annotation.pk).update(status=Annotation.Status.SUBMITTED)


def _gold(annotation: Annotation) -> None:
    Item.objects.filter(pk=annotation.item_id).update(state=Item.State.GOLD)


def _row(model: Model) -> tuple[object, ...]:
    current = Annotation.objects.get(pk=model.pk)
    return tuple(getattr(current, name) for name in FIELDS)


@pytest.mark.parametrize(
    ("change", "stale"),
    [(_nothing, False), (_nothing, True), (_submitted, False), (_gold, False)],
    ids=["open", "stale version", "submitted", "gold item"],
)
def test_the_written_out_autosave_matches_the_orms(
    annotations, change: Callable[[Annotation], None], stale: bool
) -> None:
    only_on_postgresql("the written-out statement is PostgreSQL's")
    # given two annotations in the same state, with the same labels to save
    first, second = annotations[0], annotations[1]
    now = timezone.now()
    results, rows = [], []
    for annotation, write in ((first, workflows._draft_in_one_statement), (second, _by_orm)):
        change(annotation)
        annotation.refresh_from_db()
        annotation.perception = {"situation": 'a label with ünïcode and "quotes"', "n": [1, 2.5, None]}
        annotation.tom = {"intent": "x"}
        annotation.cross_turn = {}
        version = annotation.version - 1 if stale else annotation.version
        # when each is autosaved, one by the written-out UPDATE, the other by the ORM's
        results.append(write(annotation, version, "tab-1", now))
        rows.append(_row(annotation))
    # then both are written or both refused, with the same values
    assert results[0] == results[1] == (change is _nothing and not stale)
    assert rows[0] == rows[1] or not results[0]
