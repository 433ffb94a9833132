"""One lock order (item, then its annotations): a reopen racing an adjudication waits and is refused."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from annotation.gold.adjudication import adjudicate_item
from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from annotation.labelling.workflows import AnnotationClosed, reopen_annotation
from tests.annotation.labelling.support import perception, submitted, tom
from tests.conftest import only_on_postgresql

pytestmark = pytest.mark.services


def test_a_reopen_racing_an_adjudication_waits_for_the_gold_and_is_refused(
    transactional_db: None, users, annotations
) -> None:
    only_on_postgresql("row locks need PostgreSQL")
    for annotation in annotations:
        submitted(annotation)
    source = Annotation.objects.get(pk=annotations[0].pk)
    outcome: list[object] = []

    def reopen() -> None:
        try:
            outcome.append(
                reopen_annotation(source.pk, user=source.annotator, expected_version=source.version)
            )
        except AnnotationClosed as closed:
            outcome.append(closed)
        finally:
            connection.close()

    # given a lead's adjudication that holds the item and has read its annotations
    with transaction.atomic():
        adjudicate_item(
            source.item_id, lead=users["lead"], perception=perception(), tom=tom(), expected_gold_version=0
        )
        # when the annotator reopens one of those annotations before the gold commits
        racer = threading.Thread(target=reopen)
        racer.start()
        racer.join(timeout=1.0)
        # then the reopen waits behind the item lock instead of changing what the gold was made from
        assert racer.is_alive(), "the reopen did not wait for the adjudication"

    racer.join(timeout=10)
    assert len(outcome) == 1 and isinstance(outcome[0], AnnotationClosed)
    source.refresh_from_db()
    assert source.status == Annotation.Status.SUBMITTED
    gold = GoldReference.objects.get(item_id=source.item_id)
    assert set(gold.source_annotations.values_list("status", flat=True)) == {Annotation.Status.SUBMITTED}
