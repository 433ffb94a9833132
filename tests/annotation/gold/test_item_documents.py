"""The item API answers its serializers' documents, written from plain rows: one item with its gold
in three queries, and pages of items (issue 27)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.gold.api import ItemWithGoldSerializer
from annotation.recording.models import Item
from annotation.recording.serializers import ItemSerializer
from tests.factories import DialogueFactory, GoldReferenceFactory, ItemFactory
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _as_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


@pytest.fixture
def admin(make_user: Any) -> Client:
    client = Client()
    client.force_login(make_user(Role.ADMIN))
    return client


def test_one_item_is_the_serializers_document_in_three_queries(admin: Client, make_user: Any) -> None:
    dialogue = DialogueFactory.create(turns=2, turns__actor=make_user(Role.VOICE_ACTOR))
    turn = dialogue.turns.get(turn=2)
    GoldReferenceFactory.create(item=turn, adjudicated_by=make_user(Role.LEAD_ANNOTATOR), note="agreed")
    plain = ItemFactory.create()

    with CaptureQueriesContext(connection) as queries:
        with_gold = admin.get(reverse("annotation:api_item", args=[turn.external_id]))
    assert len(queries) == 3  # the session, the item (with the reader's open work on it), its gold
    without_gold = admin.get(reverse("annotation:api_item", args=[plain.external_id]))

    assert with_gold.json() == _as_json(ItemWithGoldSerializer(Item.objects.get(pk=turn.pk)).data)
    assert with_gold.json()["gold"]["dialogue"] == dialogue.external_id
    assert without_gold.json() == _as_json(ItemWithGoldSerializer(plain).data)
    assert without_gold.json()["gold"] is None


def test_item_pages_are_the_serializers_documents(admin: Client, make_user: Any) -> None:
    ItemFactory.create_batch(2)
    DialogueFactory.create(turns=2, turns__actor=make_user(Role.VOICE_ACTOR))

    first = admin.get(reverse("annotation:api_items") + "?page_size=3")
    second = admin.get(first.json()["next"])
    assigned = admin.get(reverse("annotation:api_assignments"))

    everything = ItemSerializer(Item.objects.order_by("pk"), many=True).data
    assert first.json()["results"] + second.json()["results"] == _as_json(everything)
    assert assigned.json()["results"] == [item for item in _as_json(everything) if item["actor"]]
