"""The annotation API writes AnnotationSerializer's documents from plain rows: the same JSON as the
serializer gives for the same annotations, dialogue turns and empty fields included (issue 27)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.labelling.api import ANNOTATION_ROWS, AnnotationSerializer
from annotation.labelling.models import Annotation
from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from tests.factories import DialogueFactory
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _as_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


@pytest.fixture
def my_work(make_user: Any) -> list[Annotation]:
    """One annotator's work: a submitted item, an opened one, an untouched one and a dialogue turn."""
    annotator = make_user(Role.ANNOTATOR)
    done, opened, _untouched = (assign(LabellingItemFactory.create(), annotator)[0] for _ in range(3))
    submitted(done)
    Annotation.objects.filter(pk=opened.pk).update(
        status=Annotation.Status.DRAFT, perception={"emotion": "sad"}
    )
    turn = DialogueFactory.create(turns=2).turns.get(turn=2)
    assign(turn, annotator)
    return list(Annotation.objects.filter(annotator=annotator).order_by("-pk"))


def test_documents_from_rows_equal_the_serializers(my_work: list[Annotation]) -> None:
    rows = Annotation.objects.filter(pk__in=[a.pk for a in my_work]).order_by("-pk")
    expected = _as_json(AnnotationSerializer(rows, many=True).data)

    assert _as_json(ANNOTATION_ROWS.documents(ANNOTATION_ROWS.values(rows))) == expected
    assert [_as_json(ANNOTATION_ROWS.document_of(a)) for a in rows] == expected
    assert {document["dialogue"] for document in expected} > {None}  # a turn and a plain item
    with timezone.override("America/New_York"):
        assert (
            ANNOTATION_ROWS.documents(ANNOTATION_ROWS.values(rows))
            == AnnotationSerializer(rows, many=True).data
        )


def test_the_list_and_one_annotation_answer_the_serializers_documents(my_work: list[Annotation]) -> None:
    client = Client()
    client.force_login(my_work[0].annotator)
    expected = _as_json(AnnotationSerializer(my_work, many=True).data)

    listed = client.get(reverse("annotation:api_annotations") + "?page_size=3")
    following = client.get(listed.json()["next"])
    one = client.get(reverse("annotation:api_annotation", args=[my_work[1].pk]))

    assert listed.json()["results"] + following.json()["results"] == expected
    assert one.json() == expected[1]
