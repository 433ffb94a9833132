"""The annotator's pages cost a fixed handful of queries, however much work there is (issue 14).

Budgets count every query a request makes: the session with its user and their roles (1,
webapp.sessions), then the view's own. Each test runs in a transaction, so a view's `atomic` block adds a SAVEPOINT and its
RELEASE (2) that a served request does not pay; the budgets below include them where noted.
bench/scale.py measures the same requests against gunicorn at 10K and 100K items.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse

from annotation.labelling import workflows
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, assign, form_data, perception, tom
from tests.factories import RecordedItemFactory
from webapp.roles import Role

QUEUE_QUERIES = 2  # session with user and roles, the page's rows (one more than shown) with both tabs' counts
WORKBENCH_QUERIES = (
    3  # session with user and roles, the annotation with item/take/draft and tab counts, strategies
)
# Session with user and roles, one read (the annotation, which posted strategies exist and, on submit, the
# next open annotation), then one conditional UPDATE: a draft save needs no transaction. A submit's
# UPDATE and revision INSERT are one statement on PostgreSQL, two elsewhere, and its audit entry one
# INSERT more, all in one transaction (in a test's transaction: SAVEPOINT ... RELEASE).
AUTOSAVE_QUERIES = 3
SUBMIT_QUERIES = 6 if connection.vendor == "postgresql" else 7
API_LIST_QUERIES = 2  # session with user and roles, one cursor page (no count of all rows)


@pytest.fixture
def busy_annotator(make_user):
    """An annotator with 35 annotations on items being annotated (5 of them submitted) and 3 open
    ones on items that already have gold (off the queue)."""
    annotator = make_user(Role.ANNOTATOR, "busy")
    for _ in range(35):
        assign(LabellingItemFactory.create(), annotator)
    for _ in range(3):
        gold = RecordedItemFactory.create(state=Item.State.GOLD)
        Annotation.objects.create(item=gold, annotator=annotator)
    for annotation in Annotation.objects.filter(annotator=annotator).order_by("pk")[:5]:
        opened = workflows.open_annotation(annotation)
        workflows.submit_annotation(
            opened.pk, user=annotator, perception=perception(), tom=tom(), expected_version=opened.version
        )
    return annotator


@pytest.mark.parametrize("show", ["open", "submitted"])
def test_queue_pages_cost_a_fixed_number_of_queries(
    client_as, busy_annotator, django_assert_max_num_queries, show
) -> None:
    client = client_as(busy_annotator)
    url = reverse("annotation:annotator_queue") + f"?show={show}"
    with django_assert_max_num_queries(QUEUE_QUERIES):
        first = client.get(url)
    assert first.status_code == 200
    # Both tab counts come from one read (the 3 open ones on gold items are off the queue).
    assert first.context["counts"] == {"open": 30, "submitted": 5}
    assert first.context["page"].count == (5 if show == "submitted" else 30)
    cursor = first.context["page"].next_cursor
    if show == "open":
        assert cursor  # 25 of 25 open ones on this page, more behind
        with django_assert_max_num_queries(QUEUE_QUERIES):
            second = client.get(url + f"&after={cursor}")
        assert second.status_code == 200


def test_workbench_costs_a_fixed_number_of_queries(
    client_as, busy_annotator, django_assert_max_num_queries
) -> None:
    annotation = Annotation.objects.open_queue_of(busy_annotator)[0]
    client = client_as(busy_annotator)
    url = reverse("annotation:workbench", args=[annotation.pk])
    client.get(url)  # the first visit starts the draft (a write); later visits only read
    with django_assert_max_num_queries(WORKBENCH_QUERIES):
        response = client.get(url)
    assert response.status_code == 200
    assert str(response.context["progress"]) == "6 of 35"  # read with the annotation, no query of its own


def test_autosave_costs_a_fixed_number_of_queries(
    client_as, busy_annotator, django_assert_max_num_queries
) -> None:
    annotation = workflows.open_annotation(Annotation.objects.open_queue_of(busy_annotator)[0])
    client = client_as(busy_annotator)
    data = form_data(perception(situation="half done"), tom(), annotation.version)
    with django_assert_max_num_queries(AUTOSAVE_QUERIES):
        response = client.post(reverse("annotation:autosave", args=[annotation.pk]), data)
    assert response.status_code == 200


def test_submit_costs_a_fixed_number_of_queries_and_goes_to_the_next_open_item(
    client_as, busy_annotator, django_assert_max_num_queries
) -> None:
    queue = list(Annotation.objects.open_queue_of(busy_annotator)[:2])
    annotation = workflows.open_annotation(queue[0])
    client = client_as(busy_annotator)
    data = form_data(perception(), tom(), annotation.version)
    with django_assert_max_num_queries(SUBMIT_QUERIES):
        response = client.post(reverse("annotation:submit_annotation", args=[annotation.pk]), data)
    assert response.status_code == 302
    assert response.url == reverse("annotation:workbench", args=[queue[1].pk])
    annotation.refresh_from_db()
    assert annotation.status == Annotation.Status.SUBMITTED
    assert annotation.revisions.count() == 1


def test_own_annotations_api_costs_a_fixed_number_of_queries(
    client_as, busy_annotator, django_assert_max_num_queries
) -> None:
    client = client_as(busy_annotator)
    with django_assert_max_num_queries(API_LIST_QUERIES):
        response = client.get(reverse("annotation:api_annotations"))
    assert response.status_code == 200


def test_the_queues_have_their_indexes(db) -> None:
    with connection.cursor() as cursor:
        indexes = connection.introspection.get_constraints(cursor, Annotation._meta.db_table)
    names = {name for name, details in indexes.items() if details["index"]}
    assert {"annotation_open_queue", "annotation_submitted_list"} <= names


@pytest.mark.parametrize("action", [workflows.save_draft, workflows.submit_annotation])
def test_a_write_that_loses_the_race_after_its_read_is_refused_as_stale(
    busy_annotator, monkeypatch: pytest.MonkeyPatch, action
) -> None:
    """No lock is held between the read and the conditional write: another tab's save in between
    makes the write find a newer version, and nothing of the slower save is written."""
    annotation = workflows.open_annotation(Annotation.objects.open_queue_of(busy_annotator)[0])
    version = annotation.version
    real_checked = workflows._Labels.checked

    def meanwhile_another_tab_saves(self, target, *, complete):
        monkeypatch.setattr(workflows._Labels, "checked", real_checked)
        workflows.save_draft(
            target.pk,
            user=busy_annotator,
            perception=perception(situation="other tab"),
            tom=tom(),
            expected_version=version,
        )
        return real_checked(self, target, complete=complete)

    monkeypatch.setattr(workflows._Labels, "checked", meanwhile_another_tab_saves)
    with pytest.raises(workflows.StaleAnnotation):
        action(
            annotation.pk, user=busy_annotator, perception=perception(), tom=tom(), expected_version=version
        )
    annotation.refresh_from_db()
    assert annotation.version == version + 1 and annotation.perception["situation"] == "other tab"
    assert annotation.status == Annotation.Status.DRAFT and not annotation.revisions.exists()
