"""Keyset pages: every row exactly once in order, ties on the timestamp included; bad cursors restart."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotation.labelling.models import Annotation
from tests.factories import AnnotationFactory
from webapp.keyset import keyset_page
from webapp.roles import Role


def test_pages_walk_every_row_once_in_order_even_with_equal_timestamps(make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    created = [AnnotationFactory.create(annotator=annotator) for _ in range(7)]
    moment = timezone.now()
    # Three share one timestamp: the id breaks the tie, so none is skipped or shown twice.
    for index, annotation in enumerate(created):
        Annotation.objects.filter(pk=annotation.pk).update(
            assigned_at=moment + timedelta(seconds=min(index, 3))
        )
    rows = Annotation.objects.filter(annotator=annotator)
    for descending in (False, True):
        seen, cursor = [], ""
        while True:
            page = keyset_page(rows, key="assigned_at", descending=descending, after=cursor, size=2)
            assert page.count == 7
            seen += [row.pk for row in page]
            cursor = page.next_cursor
            if not cursor:
                break
        expected = list(rows.order_by("assigned_at", "pk").values_list("pk", flat=True))
        assert seen == (expected[::-1] if descending else expected)


def test_an_unreadable_cursor_starts_from_the_first_page(make_user) -> None:
    annotator = make_user(Role.ANNOTATOR)
    AnnotationFactory.create(annotator=annotator)
    for cursor in ("nonsense", "%%%", "MjAyNi0xMy0wMXwx", "x" * 500):
        page = keyset_page(
            Annotation.objects.filter(annotator=annotator), key="assigned_at", after=cursor, size=5
        )
        assert page.first and len(page) == 1
