"""A lead who also annotates: never sees peers' labels of an item they still have to label, and never
adjudicates an item they labelled (another lead does, or an admin overrides with a recorded reason)."""

from __future__ import annotations

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory
from django.urls import reverse

from annotation.gold.access import adjudication_refusal, needs_override_reason
from annotation.gold.adjudication import NotYoursToAdjudicate, adjudicate_item, fast_track_item
from annotation.gold.models import GoldReference
from annotation.gold.reports import adjudication_context, adjudication_queue
from annotation.labelling import workflows
from annotation.labelling.access import annotations_visible_to, may_see_others_labels
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import (
    LabellingItemFactory,
    assign,
    form_data,
    perception,
    submitted,
    tom,
)
from tests.factories import UserFactory
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(users: dict[str, User]) -> User:
    return users["lead"]


@pytest.fixture
def item_with_lead(lead: User) -> Item:
    """An item labelled by two annotators (submitted) and the lead (still open)."""
    item = LabellingItemFactory.create()
    first, second, _own = assign(
        item, UserFactory.create(role=Role.ANNOTATOR), UserFactory.create(role=Role.ANNOTATOR), lead
    )
    submitted(first), submitted(second)
    return item


def _own(item: Item, lead: User):
    return item.annotations.get(annotator=lead)


def test_a_lead_sees_no_peer_labels_of_an_item_they_still_have_to_label(
    lead: User, item_with_lead: Item
) -> None:
    other = LabellingItemFactory.create()
    peers_elsewhere = [
        submitted(annotation) for annotation in assign(other, UserFactory.create(role=Role.ANNOTATOR))
    ]

    assert not may_see_others_labels(lead, item_with_lead)
    assert may_see_others_labels(lead, other) and may_see_others_labels(lead)
    visible = set(annotations_visible_to(lead))
    assert visible == {_own(item_with_lead, lead), *peers_elsewhere}
    assert adjudication_context(item_with_lead, lead)["annotations"] == []

    submitted(_own(item_with_lead, lead))
    assert may_see_others_labels(lead, item_with_lead)
    assert set(item_with_lead.annotations.all()) <= set(annotations_visible_to(lead))


def test_a_reopened_annotation_hides_peer_labels_again(lead: User, item_with_lead: Item) -> None:
    mine = submitted(_own(item_with_lead, lead))
    assert may_see_others_labels(lead, item_with_lead)
    workflows.reopen_annotation(mine.pk, user=lead, expected_version=mine.version)
    assert not may_see_others_labels(lead, item_with_lead)
    assert set(annotations_visible_to(lead).filter(item=item_with_lead)) == {mine}


def test_the_django_admin_annotation_list_hides_peer_labels_too(
    item_with_lead: Item, users: dict[str, User]
) -> None:
    admin_annotator = users["admin"]
    assign(item_with_lead, admin_annotator)  # an admin who also annotates, still labelling
    request = RequestFactory().get("/")
    request.user = admin_annotator
    shown = set(site._registry[Annotation].get_queryset(request))
    assert shown == {item_with_lead.annotations.get(annotator=admin_annotator)}


def test_a_lead_never_adjudicates_an_item_they_labelled(lead: User, item_with_lead: Item, client_for) -> None:
    submitted(_own(item_with_lead, lead))
    client = client_for("lead")

    page = client.get(reverse("annotation:adjudicate", args=[item_with_lead.pk]))
    assert page.status_code == 302
    posted = client.post(
        reverse("annotation:adjudicate", args=[item_with_lead.pk]), form_data(perception(), tom(), version=0)
    )
    assert posted.status_code == 302 and not GoldReference.objects.exists()
    with pytest.raises(NotYoursToAdjudicate, match="You labelled this item"):
        adjudicate_item(
            item_with_lead.pk, lead=lead, perception=perception(), tom=tom(), expected_gold_version=0
        )
    with pytest.raises(NotYoursToAdjudicate):
        fast_track_item(item_with_lead.pk, lead=lead, expected_gold_version=0)
    assert item_with_lead not in [row[0] for row in adjudication_queue("ready", None, viewer=lead)["rows"]]

    another = UserFactory.create(role=Role.LEAD_ANNOTATOR)
    assert item_with_lead in [row[0] for row in adjudication_queue("ready", None, viewer=another)["rows"]]
    gold = adjudicate_item(
        item_with_lead.pk, lead=another, perception=perception(), tom=tom(), expected_gold_version=0
    )
    assert gold.adjudicated_by == another and gold.override_reason == ""


def test_an_admin_overrides_only_with_a_reason_that_is_kept(
    lead: User, item_with_lead: Item, users: dict[str, User], client_for
) -> None:
    submitted(_own(item_with_lead, lead))
    admin = users["admin"]
    assert needs_override_reason(admin, item_with_lead) and not needs_override_reason(lead, item_with_lead)
    assert adjudication_refusal(admin, item_with_lead, override_reason=None) is None
    client = client_for("admin")
    url = reverse("annotation:adjudicate", args=[item_with_lead.pk])

    page = client.get(url)
    assert page.status_code == 200 and 'name="override_reason"' in page.content.decode()
    refused = client.post(url, form_data(perception(), tom(), version=0))
    assert refused.status_code == 409 and "give the reason" in refused.content.decode()
    assert not GoldReference.objects.exists()

    data = form_data(perception(), tom(), version=0) | {"override_reason": "  The only lead labelled it.  "}
    assert client.post(url, data).status_code == 302
    gold = GoldReference.objects.get()
    assert (gold.adjudicated_by, gold.override_reason) == (admin, "The only lead labelled it.")


@pytest.mark.parametrize("name", ["annotator", "reviewer", "evaluator", "actor"])
def test_nobody_else_adjudicates(name: str, item_with_lead: Item, users: dict[str, User], client_for) -> None:
    assert adjudication_refusal(users[name], item_with_lead, override_reason="because") is not None
    response = client_for(name).get(reverse("annotation:adjudicate", args=[item_with_lead.pk]))
    assert response.status_code in (302, 403)
