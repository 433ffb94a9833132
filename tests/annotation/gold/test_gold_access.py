"""Who may adjudicate and keep gold (annotation.gold.access), and the Django admin's gold page."""

from __future__ import annotations

import pytest
from django.http import Http404
from django.urls import reverse

from annotation.gold.access import adjudicable_item, may_adjudicate, may_keep_gold
from annotation.recording.models import Item
from tests.factories import GoldReferenceFactory, ItemFactory, RecordedItemFactory
from webapp.models import User

pytestmark = pytest.mark.django_db


def gold_item() -> Item:
    """A recorded item with gold version 1, current."""
    item = RecordedItemFactory.create(state=Item.State.GOLD)
    GoldReferenceFactory.create(item=item)
    return item


@pytest.mark.parametrize(
    ("name", "adjudicates", "keeps_gold"),
    [
        ("lead", True, True),
        ("admin", False, True),
        ("annotator", False, False),
        ("reviewer", False, False),
        ("actor", False, False),
    ],
)
def test_only_leads_adjudicate_and_leads_and_admins_keep_gold(
    users: dict[str, User], name: str, adjudicates: bool, keeps_gold: bool
) -> None:
    assert may_adjudicate(users[name]) is adjudicates
    assert may_keep_gold(users[name]) is keeps_gold


def test_only_items_being_annotated_or_gold_can_be_adjudicated() -> None:
    annotating = RecordedItemFactory.create(state=Item.State.ANNOTATING)
    gold = gold_item()

    assert adjudicable_item(annotating.pk) == annotating
    assert adjudicable_item(gold.pk) == gold
    for item in (RecordedItemFactory.create(), ItemFactory.create()):
        with pytest.raises(Http404):
            adjudicable_item(item.pk)


def test_gold_is_viewable_in_the_django_admin_but_never_added_or_deleted(client_for) -> None:
    gold = gold_item().gold_references.get()
    client = client_for("admin")

    assert client.get(reverse("admin:annotation_goldreference_changelist")).status_code == 200
    assert client.get(reverse("admin:annotation_goldreference_add")).status_code == 403
    assert client.get(reverse("admin:annotation_goldreference_delete", args=[gold.pk])).status_code == 403
