"""The item API answers its serializers' documents, written from plain rows: one item with its gold
in three queries, and pages of items (issue 27); the one item's two reads are compiled once and
read what the ORM reads (issue 46)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.db.models import Model
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.gold import api
from annotation.gold.api import ItemWithGoldSerializer
from annotation.gold.models import GoldReference
from annotation.labelling.access import as_read_by, may_see_others_labels, with_still_labelling
from annotation.recording.models import Item
from annotation.recording.serializers import ItemSerializer
from tests.factories import (
    AnnotationFactory,
    DialogueFactory,
    GoldReferenceFactory,
    ItemFactory,
    RecordedItemFactory,
)
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


# The one-item API's reads, compiled once (`webapp.fixed_reads`, issue 46), return what the ORM's
# own querysets return, on SQLite and PostgreSQL alike.


def _state(row: Model) -> dict[str, Any]:
    """A row's fields and annotations, and those of the objects select_related loaded with it."""
    seen = {key: value for key, value in vars(row).items() if not key.startswith("_")}
    cached = row._state.fields_cache
    return {**seen, **{name: _state(other) if other else None for name, other in cached.items()}}


def test_the_item_read_is_the_orms_for_each_reader(make_user: Any) -> None:
    labelling, free = make_user(Role.LEAD_ANNOTATOR), make_user(Role.ADMIN)
    dialogue = DialogueFactory.create(turns=2, turns__actor=make_user(Role.VOICE_ACTOR))
    items = [dialogue.turns.get(turn=2), RecordedItemFactory.create()]
    for item in items:
        AnnotationFactory.create(item=item, annotator=labelling)  # open: still labelling it

    for reader in (labelling, free):
        for item in items:
            orm = with_still_labelling(Item.objects.select_related("actor", "dialogue"), reader)
            expected = orm.get(external_id=item.external_id)
            read = [
                as_read_by(row, reader)
                for row in api._ITEM_READ.read(user_id=reader.pk, external_id=item.external_id)
            ]
            assert [_state(row) for row in read] == [_state(expected)]
            assert may_see_others_labels(reader, read[0]) is (reader == free)
    assert api._ITEM_READ.read(user_id=free.pk, external_id="no-such-item") == []


def test_current_gold_is_the_orms_read(make_user: Any) -> None:
    item = RecordedItemFactory.create(state=Item.State.GOLD)
    GoldReferenceFactory.create(item=item, adjudicated_by=make_user(Role.LEAD_ANNOTATOR))
    GoldReference.objects.filter(item=item).update(is_current=False)
    newest = GoldReferenceFactory.create(item=item, version=2, adjudicated_by=make_user(Role.ADMIN))
    other = RecordedItemFactory.create()

    for asked in (item, item.pk, other, other.pk):
        item_id = asked if isinstance(asked, int) else asked.pk
        orm = GoldReference.objects.current().filter(item_id=item_id).select_related("adjudicated_by").first()
        read = GoldReference.objects.current_of(asked)
        assert (read and _state(read)) == (orm and _state(orm))
    assert GoldReference.objects.current_of(item) == newest
    # A narrowed queryset keeps its own conditions (read by the ORM).
    assert GoldReference.objects.filter(version=1).current_of(item) is None
