"""Labelling a dialogue turn: cross-turn labels required from turn 2, the history on the workbench,
and blindness (no one's labels of any turn reach an annotator's page before they submit)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.labelling import workflows
from annotation.labelling.checking import InvalidLabels
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.dialogue.support import (
    cross_turn,
    recorded_dialogue,
    submit_turn,
    turn_form_data,
    turn_perception,
    turn_tom,
)
from tests.annotation.labelling.support import assign, perception, submitted, tom
from tests.factories import GoldReferenceFactory
from webapp.roles import Role
from webapp.storage import key_for_viewer

pytestmark = pytest.mark.django_db

CROSS_TURN_FIELDS = {
    "cross_turn.emotion_change",
    "cross_turn.emotion_change_cause",
    "cross_turn.last_strategy_helped",
    "cross_turn.strategy_adaptation",
}


def test_submitting_turn_three_without_cross_turn_labels_is_refused_and_the_draft_kept(users) -> None:
    _, turns = recorded_dialogue(3)
    (annotation,) = assign(turns[2], users["annotator"])
    opened = workflows.open_annotation(annotation)
    with pytest.raises(InvalidLabels) as refused:
        workflows.submit_annotation(
            opened.pk,
            user=users["annotator"],
            perception=turn_perception(),
            tom=turn_tom(),
            cross_turn={"emotion_change": "eased"},
            expected_version=opened.version,
            keep_incomplete_draft=True,
        )
    assert {p.field for p in refused.value.problems} == CROSS_TURN_FIELDS - {"cross_turn.emotion_change"}
    assert "Cause of the change" in str(refused.value)
    kept = Annotation.objects.get(pk=annotation.pk)
    assert kept.status == Annotation.Status.DRAFT
    assert kept.cross_turn["emotion_change"] == "eased"  # the unfinished draft is not lost


def test_a_complete_turn_three_is_submitted_with_its_cross_turn_labels_and_revision(users) -> None:
    _, turns = recorded_dialogue(3)
    (annotation,) = assign(turns[2], users["annotator"])
    done = submit_turn(annotation)
    stored = Annotation.objects.get(pk=done.pk)
    assert stored.status == Annotation.Status.SUBMITTED
    assert stored.cross_turn == cross_turn()
    assert stored.revisions.get().cross_turn == cross_turn()


@pytest.mark.parametrize("which", ["first turn", "single item"])
def test_cross_turn_labels_are_refused_where_there_is_no_previous_turn(users, which: str) -> None:
    _, turns = recorded_dialogue(2)
    from tests.annotation.labelling.support import LabellingItemFactory

    item = turns[0] if which == "first turn" else LabellingItemFactory.create()
    (annotation,) = assign(item, users["annotator"])
    opened = workflows.open_annotation(annotation)
    documents = (turn_perception(), turn_tom()) if which == "first turn" else (perception(), tom())
    for action in (workflows.save_draft, workflows.submit_annotation):
        with pytest.raises(InvalidLabels) as refused:
            action(
                opened.pk,
                user=users["annotator"],
                perception=documents[0],
                tom=documents[1],
                cross_turn=cross_turn(),
                expected_version=opened.version,
            )
        assert [p.field for p in refused.value.problems] == ["cross_turn"]
    # Without them, the first turn is submitted as a single item is, and keeps no cross-turn document.
    done = workflows.submit_annotation(
        opened.pk,
        user=users["annotator"],
        perception=documents[0],
        tom=documents[1],
        expected_version=opened.version,
    )
    assert Annotation.objects.get(pk=done.pk).cross_turn == {}


def test_unknown_adaptation_strategies_refuse_even_a_draft(users) -> None:
    _, turns = recorded_dialogue(2)
    (annotation,) = assign(turns[1], users["annotator"])
    opened = workflows.open_annotation(annotation)
    with pytest.raises(InvalidLabels) as refused:
        workflows.save_draft(
            opened.pk,
            user=users["annotator"],
            perception={},
            tom={},
            cross_turn={"adaptation_strategies": ["nagging"]},
            expected_version=opened.version,
        )
    assert [p.field for p in refused.value.problems] == ["cross_turn.adaptation_strategies"]


def test_the_workbench_of_turn_three_shows_the_history_with_audio_and_replies(users, client_for) -> None:
    _, turns = recorded_dialogue(3)
    # Turn 2 has gold with a reference response: its reply is that; turn 1's is its scripted reply.
    GoldReferenceFactory.create(item=turns[1], reference_response="Losing work is frightening; I'm here.")
    (annotation,) = assign(turns[2], users["annotator"])
    response = client_for("annotator").get(reverse("annotation:workbench", args=[annotation.pk]))
    assert response.status_code == 200
    history = response.context["history"]
    assert [(turn.turn, turn.text) for turn in history] == [(1, turns[0].text), (2, turns[1].text)]
    assert [turn.reply for turn in history] == [
        turns[0].reference_reply,
        "Losing work is frightening; I'm here.",
    ]
    assert [turn.reply_is_gold for turn in history] == [False, True]
    for turn, item in zip(history, turns, strict=False):
        # Signed for this annotator only, naming the accepted take.
        token = turn.audio_url.rstrip("/").rsplit("/", 1)[-1]
        assert item.recording is not None
        assert key_for_viewer(token, users["annotator"]) == item.recording.audio_key
        assert key_for_viewer(token, users["lead"]) is None
    page = response.content.decode()
    assert page.count('data-testid="history-audio"') == 2
    assert 'name="x_emotion_change"' in page and 'name="x_adaptation_strategies"' in page
    audio = client_for("annotator").get(history[0].audio_url)
    assert audio.status_code == 200


def test_turn_one_and_single_items_show_no_cross_turn_fields(users, client_for) -> None:
    _, turns = recorded_dialogue(2)
    (first,) = assign(turns[0], users["annotator"])
    page = client_for("annotator").get(reverse("annotation:workbench", args=[first.pk]))
    assert page.context["history"] == [] and not page.context["needs_cross_turn"]
    assert 'name="x_emotion_change"' not in page.content.decode()
    assert 'data-testid="dialogue-history"' in page.content.decode()


def test_blindness_no_peer_labels_of_any_turn_and_previous_gold_only_once_adjudicated(
    users, client_for, make_user
) -> None:
    _, turns = recorded_dialogue(3)
    peer = make_user(Role.ANNOTATOR, "peer")
    secret = "PEER-ONLY situation words"
    for item in turns[:2]:
        (theirs,) = assign(item, peer)
        submit_turn(theirs, perception=turn_perception(situation=secret, emotion="angry"))
    (mine,) = assign(turns[2], users["annotator"])
    (peer_on_three,) = assign(turns[2], peer)
    submit_turn(peer_on_three, cross_turn=cross_turn(emotion_change_cause=secret))
    url = reverse("annotation:workbench", args=[mine.pk])
    page = client_for("annotator").get(url)
    text = page.content.decode()
    assert secret not in text
    assert 'value="angry" checked' not in text  # the peer's emotion of turns 1 and 2 pre-fills nothing
    assert page.context["previous_gold"] is None and 'data-testid="previous-gold"' not in text

    # Once turn 2 has gold, its adjudicated perception may anchor the change (not a peer's label).
    GoldReferenceFactory.create(item=turns[1], perception=turn_perception(emotion="sad", intensity="low"))
    text = client_for("annotator").get(url).content.decode()
    assert 'data-testid="previous-gold"' in text and "sad, low intensity" in text
    assert secret not in text


def test_the_workbench_form_submits_cross_turn_fields(users, client_for) -> None:
    _, turns = recorded_dialogue(3)
    (annotation,) = assign(turns[2], users["annotator"])
    client = client_for("annotator")
    client.get(reverse("annotation:workbench", args=[annotation.pk]))
    version = Annotation.objects.get(pk=annotation.pk).version
    missing = turn_form_data(version, cross_turn=cross_turn(last_strategy_helped=""))
    refused = client.post(reverse("annotation:submit_annotation", args=[annotation.pk]), missing)
    assert refused.status_code == 422
    assert "Did the last reply&#x27;s strategy help?" in refused.content.decode()
    version = Annotation.objects.get(pk=annotation.pk).version
    done = client.post(reverse("annotation:submit_annotation", args=[annotation.pk]), turn_form_data(version))
    assert done.status_code == 302
    assert Annotation.objects.get(pk=annotation.pk).cross_turn == cross_turn()


def test_the_api_requires_cross_turn_labels_on_later_turns_and_shows_dialogue_and_turn(users) -> None:
    from rest_framework.test import APIClient

    _, turns = recorded_dialogue(3)
    (annotation,) = assign(turns[2], users["annotator"])
    opened = workflows.open_annotation(annotation)
    client = APIClient()
    client.force_authenticate(users["annotator"])
    url = reverse("annotation:api_annotation_submit", args=[annotation.pk])
    body = {"version": opened.version, "perception": turn_perception(), "tom": turn_tom()}
    refused = client.post(url, body, format="json")
    assert refused.status_code == 400
    assert {p["field"] for p in refused.json()["problems"]} == CROSS_TURN_FIELDS
    done = client.post(url, {**body, "cross_turn": cross_turn()}, format="json")
    assert done.status_code == 200, done.json()
    assert (done.json()["dialogue"], done.json()["turn"], done.json()["cross_turn"]) == (
        "ED-0001",
        3,
        cross_turn(),
    )
    listed = client.get(reverse("annotation:api_annotations")).json()["results"]
    assert [(row["dialogue"], row["turn"]) for row in listed] == [("ED-0001", 3)]


def test_another_annotators_dialogue_turn_is_not_found(users, client_for, make_user) -> None:
    _, turns = recorded_dialogue(2)
    (theirs,) = assign(turns[1], make_user(Role.ANNOTATOR, "other"))
    assert client_for("annotator").get(reverse("annotation:workbench", args=[theirs.pk])).status_code == 404
    assert client_for("reviewer").get(reverse("annotation:workbench", args=[theirs.pk])).status_code in (
        302,
        403,
    )
    assert Item.objects.get(pk=turns[1].pk).turn == 2
    assert submitted is not None  # the single-item helper stays importable beside the dialogue one


def test_autosave_keeps_unfinished_cross_turn_labels(users, client_for) -> None:
    _, turns = recorded_dialogue(2)
    (annotation,) = assign(turns[1], users["annotator"])
    client = client_for("annotator")
    client.get(reverse("annotation:workbench", args=[annotation.pk]))
    version = Annotation.objects.get(pk=annotation.pk).version
    data = turn_form_data(
        version, cross_turn={"emotion_change": "shifted", "adaptation_strategies": ["questioning"]}
    )
    saved = client.post(reverse("annotation:autosave", args=[annotation.pk]), data)
    assert saved.status_code == 200
    stored = Annotation.objects.get(pk=annotation.pk)
    assert stored.status == Annotation.Status.DRAFT
    assert (stored.cross_turn["emotion_change"], stored.cross_turn["adaptation_strategies"]) == (
        "shifted",
        ["questioning"],
    )
    assert "Draft saved" in saved.content.decode()
