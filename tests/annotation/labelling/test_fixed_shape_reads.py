"""The workbench's and the saves' reads, compiled once (`webapp.fixed_reads`), return what the
ORM's own queryset returns, in every shape, on SQLite and PostgreSQL alike (issue 46)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.db.models import Model
from django.http import Http404
from django.utils import timezone

from annotation.labelling import access, api, views, workflows
from annotation.labelling.models import Annotation, Strategy
from annotation.recording.models import Item
from tests.annotation.labelling.support import submitted
from webapp.models import User

pytestmark = pytest.mark.django_db


def _state(row: Model) -> dict[str, Any]:
    """A row's fields and annotations, and those of the objects select_related loaded with it."""
    seen = {
        key: value for key, value in vars(row).items() if not key.startswith("_") or key.startswith("_known")
    }
    cached = row._state.fields_cache
    return {**seen, **{name: _state(other) if other else None for name, other in cached.items()}}


@pytest.mark.parametrize("with_tab_counts", [False, True])
@pytest.mark.parametrize("with_strategies", [False, True])
def test_own_annotation_reads_as_the_orm_reads_it(
    annotations: list[Annotation], trio: list[User], with_tab_counts: bool, with_strategies: bool
) -> None:
    submitted(annotations[1])
    flags = {"with_tab_counts": with_tab_counts, "with_strategies": with_strategies}
    for annotation, user in zip(annotations, trio, strict=True):
        orm = list(access._own_annotation_rows(user.pk, annotation.pk, **flags))
        for row in orm:
            row.annotator = user  # as own_annotation sets it
        read = access.own_annotation(user, annotation.pk, **flags)
        assert [_state(read)] == [_state(row) for row in orm]
        assert read.annotator == user

    with pytest.raises(Http404):  # another's annotation
        access.own_annotation(trio[0], annotations[1].pk, **flags)
    for missing in (10**6, 2**40):  # no such annotation; an id past the column's range
        with pytest.raises(Http404):
            access.own_annotation(trio[0], missing, **flags)


@pytest.mark.parametrize("with_next", [False, True])
@pytest.mark.parametrize(
    "posted", [[], ["emotional-validation"], ["emotional-validation", "no-such-strategy"]]
)
def test_the_read_for_a_change_reads_as_the_orm_reads_it(
    annotations: list[Annotation], trio: list[User], with_next: bool, posted: list[str]
) -> None:
    assert Strategy.objects.filter(slug="emotional-validation").exists()
    other_item = Item.objects.create(external_id="EE-0002", text="another line")
    later = Annotation.objects.create(item=other_item, annotator=trio[0])
    slugs = {f"slug_{index}": slug for index, slug in enumerate(posted)}

    for annotation, user in ((annotations[0], trio[0]), (later, trio[0]), (annotations[1], trio[1])):
        orm = list(workflows._rows_for_change(annotation.pk, user.pk, with_next=with_next, **slugs))
        shape = (len(slugs), with_next)
        workflows._CHANGE_READS.pop(shape, None)  # compiled afresh here, then read compiled
        for _ in range(2):
            read = workflows._CHANGE_READS.get(shape)
            labels = workflows._Labels.of({}, {"recommended_strategies": posted}, None)
            fixed = workflows._read_for_change(
                annotation.pk, user, annotation.version, labels, with_next=with_next
            )
            assert shape in workflows._CHANGE_READS and (
                read is None or workflows._CHANGE_READS[shape] is read
            )
            assert [_state(fixed)] == [_state(row) for row in orm]
    if with_next:
        assert (
            vars(workflows._rows_for_change(annotations[0].pk, trio[0].pk, with_next=True)[0])["next_open_id"]
            == later.pk
        )

    labels = workflows._Labels.of({}, {"recommended_strategies": posted}, None)
    with pytest.raises(Http404):  # another's annotation
        workflows._read_for_change(
            annotations[1].pk, trio[0], annotations[1].version, labels, with_next=with_next
        )


@pytest.mark.filterwarnings(
    "ignore:DateTimeField .* received a naive datetime:RuntimeWarning"
)  # the naive cursor
@pytest.mark.parametrize("show_submitted", [False, True])
def test_a_queue_page_reads_as_the_orm_reads_it(trio: list[User], show_submitted: bool) -> None:
    items = Item.objects.bulk_create(
        Item(external_id=f"EE-1{n:03d}", text=f"Oh great, I love line {n}") for n in range(30)
    )
    mine = [Annotation.objects.create(item=item, annotator=trio[0]) for item in items]
    for annotation in mine[::2]:
        submitted(annotation)
    Annotation.objects.create(item=items[0], annotator=trio[1])  # another's: never on the page
    key = views._queue_key(show_submitted)
    rows = list(Annotation.objects.filter(pk__in=[a.pk for a in mine]).order_by("pk"))
    aware = timezone.now() - datetime.timedelta(days=1)
    positions = [
        None,
        (getattr(rows[3], key) or aware, rows[3].pk),
        (aware, 2**40),
        (aware.replace(tzinfo=None), 5),
    ]

    for position in positions:
        moment, after_pk = position if position is not None else (None, None)
        orm = list(views._queue_page_rows(trio[0].pk, moment, after_pk, show_submitted=show_submitted))
        for _ in range(2):  # compiled, then read compiled
            read = views._read_queue_page(trio[0].pk, position, show_submitted=show_submitted)
            assert [_state(row) for row in read] == [_state(row) for row in orm]
    assert views._read_queue_page(trio[2].pk, None, show_submitted=show_submitted) == []


def test_one_annotation_document_reads_as_the_orm_reads_it(
    annotations: list[Annotation], trio: list[User]
) -> None:
    submitted(annotations[1])
    for annotation, user in zip(annotations, trio, strict=True):
        orm = api.ANNOTATION_ROWS.documents(api._own_document_rows(user.pk, annotation.pk))
        assert [api.own_document(user, annotation.pk)] == orm
        assert orm and orm[0]["id"] == annotation.pk

    with pytest.raises(Http404):  # another's annotation
        api.own_document(trio[0], annotations[1].pk)
    for missing in (10**6, 2**40):  # no such annotation; an id past the column's range
        with pytest.raises(Http404):
            api.own_document(trio[0], missing)
