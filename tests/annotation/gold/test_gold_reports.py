"""The adjudication page and queue cost the same queries for two annotators or six, few items or many."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.gold.reports import adjudication_context, adjudication_queue
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from tests.factories import UserFactory
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _ready_item(annotators: int) -> Item:
    item = LabellingItemFactory.create()
    for annotation in assign(item, *(UserFactory.create(role=Role.ANNOTATOR) for _ in range(annotators))):
        submitted(annotation)
    return item


def _queries(call) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def test_the_adjudication_page_is_flat_in_the_number_of_annotations() -> None:
    two, six = _ready_item(2), _ready_item(6)

    assert _queries(lambda: adjudication_context(two)) == _queries(lambda: adjudication_context(six))


@pytest.mark.parametrize("tab", ["ready", "in_progress", "gold"])
def test_the_adjudication_queue_is_flat_in_the_number_of_items(tab: str) -> None:
    _ready_item(2)
    few = _queries(lambda: adjudication_queue(tab, None))
    for _ in range(4):
        _ready_item(3)

    assert _queries(lambda: adjudication_queue(tab, None)) == few


def test_the_ready_tab_lists_items_whose_annotations_are_all_submitted() -> None:
    ready = _ready_item(2)
    busy = LabellingItemFactory.create()
    assign(busy, UserFactory.create(role=Role.ANNOTATOR))

    context = adjudication_queue("ready", None)

    assert [item for item, _ in context["rows"]] == [ready]
    assert Annotation.objects.filter(item=busy).get().status == Annotation.Status.ASSIGNED
