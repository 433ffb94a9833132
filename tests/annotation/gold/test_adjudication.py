"""A lead turns the submitted annotations into a versioned gold reference (who, when), or fast-tracks."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.gold.adjudication import StaleGold, adjudicate_item
from annotation.gold.models import GoldReference
from annotation.recording.models import Item
from tests.annotation.labelling.support import form_data, perception, submitted, tom


@pytest.fixture
def disagreeing(annotations):
    """Ana and Ben say angry, Cleo says sad; all three submitted."""
    submitted(annotations[0], perception=perception(emotion="angry", situation="A's situation"))
    submitted(annotations[1], perception=perception(emotion="angry", situation="B's situation"))
    submitted(annotations[2], perception=perception(emotion="sad", situation="C's situation"))
    return annotations


def test_the_page_shows_annotations_side_by_side_with_disagreements_highlighted(
    client_for, disagreeing
) -> None:
    item = disagreeing[0].item
    page = client_for("lead").get(reverse("annotation:adjudicate", args=[item.pk])).content.decode()
    for name in ("ana", "ben", "cleo"):
        assert f"<th>{name}</th>" in page
    assert 'data-field="perception.emotion" data-agreed="false"' in page
    assert 'data-field="perception.polarity" data-agreed="true"' in page
    # The majority emotion is pre-filled, and no fast-track is offered for a disagreement.
    assert '<option value="angry" selected>' in page
    assert 'data-testid="fast-track"' not in page


def test_the_queue_lists_ready_items_only(client_for, annotations) -> None:
    lead = client_for("lead")
    submitted(annotations[0])
    assert (
        annotations[0].item.external_id
        not in lead.get(reverse("annotation:adjudication_queue")).content.decode()
    )
    in_progress = lead.get(reverse("annotation:adjudication_queue") + "?show=in_progress").content.decode()
    assert "1 of 3" in in_progress
    submitted(annotations[1])
    submitted(annotations[2])
    ready = lead.get(reverse("annotation:adjudication_queue")).content.decode()
    assert annotations[0].item.external_id in ready
    assert "Fast-track" in ready  # identical complete labels agree everywhere
    # Each tab says how many items it holds.
    assert 'data-testid="count-ready">1<' in ready and 'data-testid="count-in_progress">0<' in ready


def test_adjudication_saves_a_new_gold_version_with_who_and_when(client_for, users, disagreeing) -> None:
    item = disagreeing[0].item
    lead = client_for("lead")
    chosen = perception(emotion="angry", situation="The lead's wording")
    response = lead.post(
        reverse("annotation:adjudicate", args=[item.pk]), form_data(chosen, tom(), version=0)
    )
    assert response.status_code == 302
    gold = GoldReference.objects.get(item=item)
    assert (gold.version, gold.is_current, gold.adjudicated_by, gold.fast_tracked) == (
        1,
        True,
        users["lead"],
        False,
    )
    assert gold.perception["situation"] == "The lead's wording"
    assert gold.created_at is not None
    assert sorted(gold.source_annotations.values_list("annotator__username", flat=True)) == [
        "ana",
        "ben",
        "cleo",
    ]
    item.refresh_from_db()
    assert item.state == Item.State.GOLD
    # A second adjudication adds version 2; version 1 stays as history.
    lead.post(
        reverse("annotation:adjudicate", args=[item.pk]),
        form_data(perception(emotion="sad"), tom(), version=1),
    )
    versions = list(
        GoldReference.objects.filter(item=item).order_by("version").values_list("version", "is_current")
    )
    assert versions == [(1, False), (2, True)]
    assert GoldReference.objects.get(item=item, is_current=True).perception["emotion"] == "sad"


def test_a_lead_saving_over_a_newer_gold_is_refused(client_for, users, disagreeing) -> None:
    item = disagreeing[0].item
    adjudicate_item(item.pk, lead=users["lead"], perception=perception(), tom=tom(), expected_gold_version=0)
    with pytest.raises(StaleGold):
        adjudicate_item(
            item.pk, lead=users["lead"], perception=perception(), tom=tom(), expected_gold_version=0
        )
    response = client_for("lead").post(
        reverse("annotation:adjudicate", args=[item.pk]), form_data(perception(), tom(), version=0)
    )
    assert response.status_code == 409
    assert b"another lead saved gold version 1" in response.content
    assert GoldReference.objects.filter(item=item).count() == 1


def test_incomplete_gold_is_refused_with_reasons(client_for, disagreeing) -> None:
    item = disagreeing[0].item
    response = client_for("lead").post(
        reverse("annotation:adjudicate", args=[item.pk]), form_data(perception(emotion=""), tom(), version=0)
    )
    assert response.status_code == 422
    assert b"Primary emotion: Choose a value." in response.content
    assert not GoldReference.objects.filter(item=item).exists()


def test_a_disagreeing_item_is_not_fast_tracked(client_for, disagreeing) -> None:
    item = disagreeing[0].item
    response = client_for("lead").post(
        reverse("annotation:fast_track", args=[item.pk]), {"version": "0"}, follow=True
    )
    assert "disagree on a categorical field" in response.content.decode()
    assert not GoldReference.objects.filter(item=item).exists()


def test_fast_track_saves_the_proposal(client_for, users, annotations) -> None:
    submitted(annotations[0], perception=perception(situation="first words"))
    submitted(annotations[1], perception=perception(situation="second words"))
    submitted(annotations[2], perception=perception(situation="third words"))
    item = annotations[0].item
    response = client_for("lead").post(reverse("annotation:fast_track", args=[item.pk]), {"version": "0"})
    assert response.status_code == 302
    gold = GoldReference.objects.get(item=item)
    assert gold.fast_tracked and gold.adjudicated_by == users["lead"]
    assert gold.perception == perception(situation="first words")


def test_annotations_close_once_the_item_is_gold(client_as, users, disagreeing) -> None:
    item = disagreeing[0].item
    adjudicate_item(item.pk, lead=users["lead"], perception=perception(), tom=tom(), expected_gold_version=0)
    ana = client_as(disagreeing[0].annotator)
    page = ana.get(reverse("annotation:workbench", args=[disagreeing[0].pk])).content.decode()
    assert "Reopen to revise" not in page
