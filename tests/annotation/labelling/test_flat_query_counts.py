"""Each annotator request makes the same number of queries with ten times the work (issue 27):
more items in the studio, more of them in the annotator's queue, more submitted, more peers."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.labelling import workflows
from annotation.labelling.models import Annotation
from tests.annotation.labelling.support import LabellingItemFactory, assign, form_data, perception, tom
from tests.factories import ItemFactory
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _grow(annotator: User, peer: User, items: int) -> None:
    """Give the annotator (and a peer) `items` more recorded items, a fifth of them submitted,
    and the studio as many again that nobody labels yet."""
    for n in range(items):
        annotation, _ = assign(LabellingItemFactory.create(), annotator, peer)
        if n % 5 == 0:
            opened = workflows.open_annotation(annotation)
            workflows.submit_annotation(
                opened.pk, user=annotator, perception=perception(), tom=tom(), expected_version=opened.version
            )
    ItemFactory.create_batch(items)


def _queries_of_each_request(client: Client, annotator: User) -> dict[str, int]:
    """Return {request: queries} for the annotator's pages and API, on a fresh open annotation."""
    queue = list(Annotation.objects.open_queue_of(annotator).values_list("pk", flat=True)[:2])
    draft = workflows.open_annotation(Annotation.objects.get(pk=queue[0]))
    to_submit = workflows.open_annotation(Annotation.objects.get(pk=queue[1]))
    # A first visit may store the take's waveform tracks (a take analysed before they were kept).
    client.get(reverse("annotation:workbench", args=[draft.pk]))
    requests: dict[str, Callable[[], object]] = {
        "queue": lambda: client.get(reverse("annotation:annotator_queue")),
        "submitted tab": lambda: client.get(reverse("annotation:annotator_queue") + "?show=submitted"),
        "workbench": lambda: client.get(reverse("annotation:workbench", args=[draft.pk])),
        "autosave": lambda: client.post(
            reverse("annotation:autosave", args=[draft.pk]),
            form_data(perception(situation="half"), tom(), draft.version),
        ),
        "submit": lambda: client.post(
            reverse("annotation:submit_annotation", args=[to_submit.pk]),
            form_data(perception(), tom(), to_submit.version),
        ),
        "list API": lambda: client.get(reverse("annotation:api_annotations") + "?page_size=30"),
        "one annotation API": lambda: client.get(reverse("annotation:api_annotation", args=[draft.pk])),
    }
    counts = {}
    for name, send in requests.items():
        with CaptureQueriesContext(connection) as captured:
            send()
        counts[name] = len(captured)
    return counts


def test_query_counts_stay_flat_with_ten_times_the_work(make_user: Callable[..., User]) -> None:
    annotator, peer = make_user(Role.ANNOTATOR), make_user(Role.ANNOTATOR)
    client = Client()
    client.force_login(annotator)
    _grow(annotator, peer, 4)
    small = _queries_of_each_request(client, annotator)

    _grow(annotator, peer, 36)
    large = _queries_of_each_request(client, annotator)

    assert large == small
    assert small["queue"] == 2 and small["list API"] == 2  # the session read, then the page
    assert small["one annotation API"] == 2
    assert small["workbench"] == 2  # the session, then the annotation with its counts and strategies
