"""The lead's pages (adjudication, its queue, the gold page) cost the same queries for little data and more."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.gold.reports import (
    RECENT_TRANSFERS,
    adjudication_context,
    adjudication_queue,
    gold_transfers,
)
from annotation.gold.transfer.jobs import EXPORT_KIND, IMPORT_KIND
from annotation.labelling.access import may_see_others_labels
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from tests.factories import GoldReferenceFactory, UserFactory
from webapp.models import Job, JobStatus
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
    lead = UserFactory.create(role=Role.LEAD_ANNOTATOR)
    may_see_others_labels(lead)  # the lead's roles are read once per request, before the page

    assert _queries(lambda: adjudication_context(two, lead)) == _queries(
        lambda: adjudication_context(six, lead)
    )


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


def test_the_adjudication_page_shows_the_labels_its_viewer_may_see() -> None:
    first, second = UserFactory.create(role=Role.ANNOTATOR), UserFactory.create(role=Role.ANNOTATOR)
    item = LabellingItemFactory.create()
    mine, theirs = (submitted(annotation) for annotation in assign(item, first, second))
    lead = UserFactory.create(role=Role.LEAD_ANNOTATOR)

    # The rule is labelling.access.may_see_others_labels: a lead sees all, an annotator only theirs.
    assert adjudication_context(item, lead)["annotations"] == [mine, theirs]
    assert adjudication_context(item, first)["annotations"] == [mine]


def _transfers(exports: int, golds: int, started_by=None) -> None:
    for _ in range(exports):
        Job.objects.create(
            kind=EXPORT_KIND, status=JobStatus.FAILED, started_by=started_by or UserFactory.create()
        )
        Job.objects.create(kind=IMPORT_KIND, status=JobStatus.RUNNING)
    for _ in range(golds):
        GoldReferenceFactory.create()


def test_the_gold_page_is_flat_in_the_number_of_jobs_and_gold_references() -> None:
    lead = UserFactory.create(role=Role.LEAD_ANNOTATOR)
    _transfers(1, 1, started_by=lead)
    gold_transfers(lead)  # reads the viewer's roles once, as a request does
    few = _queries(lambda: gold_transfers(lead))
    _transfers(8, 6, started_by=lead)

    assert _queries(lambda: gold_transfers(lead)) == few == 2


def test_the_gold_page_lists_the_latest_transfers_and_counts_current_gold() -> None:
    _transfers(8, 3)
    Job.objects.create(kind="judge_run")

    context = gold_transfers(UserFactory.create(role=Role.LEAD_ANNOTATOR))

    assert len(context["jobs"]) == RECENT_TRANSFERS
    assert all(job.kind in (EXPORT_KIND, IMPORT_KIND) and archive is None for job, archive in context["jobs"])
    assert context["running"] is True
    assert context["gold_count"] == 3
