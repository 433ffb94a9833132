"""Who may use each labelling page and endpoint: anonymous users log in, wrong roles get 403."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.annotation.labelling.support import LabellingItemFactory, assign

ROLES = ["actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole"]

# (url name, needs an object, method) -> roles allowed
PAGES = {
    ("annotation:annotator_queue", None, "get"): {"annotator", "lead"},
    ("annotation:workbench", "annotation", "get"): {"annotator", "lead"},
    ("annotation:adjudication_queue", None, "get"): {"lead"},
    ("annotation:adjudicate", "item", "get"): {"lead", "admin"},  # admin: an override with a reason
    ("annotation:agreement", None, "get"): {"lead", "admin"},
    ("annotation:gold", None, "get"): {"lead", "admin"},
    ("annotation:start_gold_export", None, "post"): {"lead", "admin"},
    ("annotation:start_gold_import", None, "post"): {"lead", "admin"},
    ("annotation:assign_annotators", None, "post"): {"lead", "admin"},
    ("annotation:start_drafts", None, "post"): {"lead", "admin"},
    ("annotation:fast_track", "item", "post"): {"lead"},
    ("annotation:autosave", "annotation", "post"): {"annotator", "lead"},
    ("annotation:submit_annotation", "annotation", "post"): {"annotator", "lead"},
    ("annotation:reopen_annotation", "annotation", "post"): {"annotator", "lead"},
}
API = {
    ("annotation:api_annotations", None, "get"),
    ("annotation:api_annotation", "annotation", "get"),
    ("annotation:api_annotation", "annotation", "put"),
    ("annotation:api_annotation_submit", "annotation", "post"),
}


@pytest.fixture
def objects(db: None, users):
    """An item on which both the annotator and the lead hold an annotation of their own."""
    item = LabellingItemFactory.create(recording=None)
    own = {
        annotation.annotator.username: annotation
        for annotation in assign(item, users["annotator"], users["lead"])
    }
    return item, own


def url_for(name: str, needs: str | None, objects, role: str) -> str:
    item, own = objects
    if needs == "item":
        return reverse(name, args=[item.pk])
    if needs == "annotation":
        # Each role asks for its own annotation where it has one, otherwise for the annotator's.
        return reverse(name, args=[(own.get(role) or own["annotator"]).pk])
    return reverse(name)


def call(client: Client, method: str, url: str):
    if method == "put":
        return client.put(url, {}, content_type="application/json")
    return getattr(client, method)(url)


@pytest.mark.parametrize(("name", "needs", "method"), sorted(PAGES, key=str))
def test_anonymous_users_are_sent_to_log_in(client, objects, name, needs, method) -> None:
    response = call(client, method, url_for(name, needs, objects, "anonymous"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(("name", "needs", "method"), sorted(PAGES, key=str))
def test_pages_open_only_for_their_roles(client_for, objects, name, needs, method) -> None:
    for role in ROLES:
        response = call(client_for(role), method, url_for(name, needs, objects, role))
        if role in PAGES[(name, needs, method)]:
            assert response.status_code not in (403, 404), (role, response.status_code)
            assert not response.get("Location", "").startswith(reverse("login"))
        else:
            assert response.status_code == 403, role


@pytest.mark.parametrize(("name", "needs", "method"), sorted(API, key=str))
def test_the_api_is_for_annotators_only(client_for, client, objects, name, needs, method) -> None:
    assert call(client, method, url_for(name, needs, objects, "anonymous")).status_code == 403
    for role in ROLES:
        response = call(client_for(role), method, url_for(name, needs, objects, role))
        expected = (200, 400) if role in ("annotator", "lead") else (403,)
        assert response.status_code in expected, (role, response.status_code)
