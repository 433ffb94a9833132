"""Gold of dialogue turns: adjudication per turn with cross-turn labels and history, fast-track,
export and import with `dialogue_id`, `turn`, `cross_turn` and `history`, and the gold API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.gold.adjudication import adjudicate_item, compare_item, fast_track_item
from annotation.gold.export import export_gold
from annotation.gold.importing import GoldImportError, import_gold, read_rows
from annotation.gold.models import GoldReference
from annotation.labelling.checking import InvalidLabels
from annotation.labelling.models import Annotation
from annotation.recording.models import Dialogue, Item
from tests.annotation.labelling.dialogue.support import (
    cross_turn,
    recorded_dialogue,
    submit_turn,
    turn_form_data,
    turn_perception,
    turn_tom,
)
from tests.annotation.labelling.support import assign
from tests.support.studio import empty_the_studio

pytestmark = pytest.mark.django_db


def annotated_turns(trio, turns: int = 3) -> list[Item]:
    """A recorded dialogue whose every turn the trio has labelled (the same labels)."""
    _, items = recorded_dialogue(turns)
    for item in items:
        for annotation in assign(item, *trio):
            submit_turn(annotation)
    return [Item.objects.get(pk=item.pk) for item in items]


def adjudicated(items: list[Item], lead, replies: dict[int, str]) -> None:
    for item in items:
        adjudicate_item(
            item.pk,
            lead=lead,
            perception=turn_perception(),
            tom=turn_tom(),
            cross_turn=cross_turn() if (item.turn or 0) > 1 else None,
            expected_gold_version=0,
            reference_response=replies.get(item.turn or 0, ""),
        )


def test_adjudicating_a_later_turn_needs_its_cross_turn_gold(users, trio) -> None:
    items = annotated_turns(trio, 3)
    with pytest.raises(InvalidLabels) as refused:
        adjudicate_item(
            items[2].pk,
            lead=users["lead"],
            perception=turn_perception(),
            tom=turn_tom(),
            expected_gold_version=0,
        )
    assert {p.field for p in refused.value.problems} >= {
        "cross_turn.emotion_change",
        "cross_turn.last_strategy_helped",
    }
    gold = adjudicate_item(
        items[2].pk,
        lead=users["lead"],
        perception=turn_perception(),
        tom=turn_tom(),
        cross_turn=cross_turn(last_strategy_helped="partly"),
        expected_gold_version=0,
    )
    assert gold.cross_turn == cross_turn(last_strategy_helped="partly")
    first = adjudicate_item(
        items[0].pk, lead=users["lead"], perception=turn_perception(), tom=turn_tom(), expected_gold_version=0
    )
    assert first.cross_turn == {}


def test_fast_track_keeps_agreed_cross_turn_labels_and_refuses_disagreement(users, trio) -> None:
    items = annotated_turns(trio, 2)
    gold = fast_track_item(items[1].pk, lead=users["lead"], expected_gold_version=0)
    assert gold.cross_turn["emotion_change"] == "intensified"
    assert gold.cross_turn["strategy_adaptation"] == cross_turn()["strategy_adaptation"]

    _, other = recorded_dialogue(2, external_id="ED-0002")
    for annotation, change in zip(assign(other[1], *trio), ("eased", "eased", "shifted"), strict=True):
        submit_turn(annotation, cross_turn=cross_turn(emotion_change=change))
    comparison = compare_item(other[1], list(Annotation.objects.submitted().filter(item=other[1])))
    assert not comparison.fast_trackable
    row = next(field for field in comparison.fields if field.path == "cross_turn.emotion_change")
    assert (row.agreed, row.proposal) == (False, "eased")


def test_the_adjudication_page_shows_history_and_cross_turn_rows_and_saves_them(
    users, trio, client_for
) -> None:
    items = annotated_turns(trio, 3)
    client = client_for("lead")
    page = client.get(reverse("annotation:adjudicate", args=[items[2].pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert text.count('data-testid="history-turn"') == 2
    assert 'data-field="cross_turn.emotion_change"' in text and 'name="x_emotion_change"' in text
    saved = client.post(
        reverse("annotation:adjudicate", args=[items[2].pk]),
        {
            **turn_form_data(0, cross_turn=cross_turn(emotion_change="shifted")),
            "reference_response": "I hear you.",
        },
    )
    assert saved.status_code == 302
    gold = GoldReference.objects.current_of(items[2])
    assert gold is not None and gold.cross_turn == cross_turn(emotion_change="shifted")
    # Leads who labelled a turn cannot adjudicate it; annotators never reach the page.
    assert client_for("annotator").get(reverse("annotation:adjudicate", args=[items[1].pk])).status_code in (
        302,
        403,
    )


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with every audio (the row's and its history's) reduced to bytes."""

    def audio(value: Any) -> Any:
        return value["bytes"] if value else None

    return [
        {
            **row,
            "audio": audio(row["audio"]),
            "history": [{**turn, "audio": audio(turn["audio"])} for turn in row["history"]],
        }
        for row in rows
    ]


@pytest.fixture
def dialogue_gold(users, trio) -> list[Item]:
    items = annotated_turns(trio, 3)
    adjudicated(items, users["lead"], {2: "Gold reply to turn two."})
    return items


def test_the_export_carries_dialogue_turn_cross_turn_and_history(dialogue_gold, tmp_path) -> None:
    export_gold(tmp_path)
    rows = {row["id"]: row for row in map(json.loads, (tmp_path / "gold.jsonl").read_text().splitlines())}
    third = rows["ED-0001.t3"]
    assert (third["dialogue_id"], third["turn"]) == ("ED-0001", 3)
    assert third["cross_turn"] == cross_turn()
    assert [entry["cross_turn"] for entry in third["annotations"]] == [cross_turn()] * 3
    assert rows["ED-0001.t1"]["annotations"][0]["cross_turn"] is None
    assert third["history"] == [
        {
            "turn": 1,
            "text": dialogue_gold[0].text,
            "audio": "audio/ED-0001.t1.wav",  # the same form as the row's own "audio"
            "reply": dialogue_gold[0].reference_reply,  # no gold reference response: the scripted reply
        },
        {
            "turn": 2,
            "text": dialogue_gold[1].text,
            "audio": "audio/ED-0001.t2.wav",
            "reply": "Gold reply to turn two.",
        },
    ]
    assert (tmp_path / "audio" / "ED-0001.t1.wav").read_bytes()[:4] == b"RIFF"
    assert (rows["ED-0001.t1"]["cross_turn"], rows["ED-0001.t1"]["history"]) == (None, [])
    parquet = {row["id"]: row for row in read_rows(tmp_path / "data" / "test-00000-of-00001.parquet")}
    assert comparable([parquet["ED-0001.t3"]]) == comparable(read_rows(tmp_path / "gold.jsonl"))[2:]


@pytest.mark.parametrize("source", ["gold.jsonl", "data/test-00000-of-00001.parquet"])
def test_export_then_import_into_an_empty_studio_round_trips_history(
    dialogue_gold, users, tmp_path, source
) -> None:
    export_gold(tmp_path / "first")
    before = comparable(read_rows(tmp_path / "first" / "gold.jsonl"))
    empty_the_studio(dialogues=True)
    summary = import_gold(tmp_path / "first" / source, imported_by=users["admin"])
    assert (summary.items_created, summary.gold_created) == (3, 3)
    dialogue = Dialogue.objects.get(external_id="ED-0001")
    assert list(dialogue.turns.order_by("turn").values_list("turn", flat=True)) == [1, 2, 3]
    imported = Annotation.objects.filter(item__turn=3)
    assert [annotation.cross_turn for annotation in imported] == [cross_turn()] * 3
    assert all(annotation.revisions.get().cross_turn == cross_turn() for annotation in imported)
    export_gold(tmp_path / "second")
    after = comparable(read_rows(tmp_path / "second" / "gold.jsonl"))
    assert after == before


def rewritten(tmp_path, item_id: str, **changes: Any):
    path = tmp_path / "gold.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["id"] == item_id:
            row.update(changes)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize(
    ("item_id", "changes", "field"),
    [
        ("ED-0001.t3", {"cross_turn": None}, "cross_turn.emotion_change"),
        (
            "ED-0001.t3",
            {"cross_turn": {**cross_turn(), "last_strategy_helped": "maybe"}},
            "cross_turn.last_strategy_helped",
        ),
        ("ED-0001.t1", {"cross_turn": cross_turn()}, "cross_turn"),
        (
            "ED-0001.t3",
            {"annotations": [{"annotator": "ana", "perception": turn_perception(), "tom": turn_tom()}]},
            "annotations[1].cross_turn.emotion_change",
        ),
        ("ED-0001.t3", {"turn": 2}, "id"),
        ("ED-0001.t3", {"dialogue_id": ""}, "dialogue_id"),
        ("ED-0001.t3", {"history": [{"turn": 4, "text": "later", "audio": None, "reply": ""}]}, "history[1]"),
        (
            "ED-0001.t3",
            {"history": [{"turn": 1, "text": "x", "audio": "../../etc/passwd", "reply": ""}]},
            "history",
        ),
    ],
)
def test_bad_dialogue_fields_import_nothing_and_are_named(
    dialogue_gold, users, tmp_path, item_id, changes, field
) -> None:
    export_gold(tmp_path, parquet=False)
    path = rewritten(tmp_path, item_id, **changes)
    versions = GoldReference.objects.count()
    with pytest.raises(GoldImportError) as refused:
        import_gold(path, imported_by=users["admin"])
    assert f", {field}:" in str(refused.value) or f"{field}:" in str(refused.value)
    assert GoldReference.objects.count() == versions


def test_the_gold_api_shows_dialogue_turn_and_cross_turn_and_links_history_audio(
    dialogue_gold, users
) -> None:
    client = APIClient()
    client.force_authenticate(users["lead"])
    listed = {row["item"]: row for row in client.get(reverse("annotation:api_gold")).json()["results"]}
    assert (listed["ED-0001.t3"]["dialogue"], listed["ED-0001.t3"]["turn"]) == ("ED-0001", 3)
    assert listed["ED-0001.t3"]["cross_turn"] == cross_turn()
    assert listed["ED-0001.t1"]["cross_turn"] == {}
    exported = client.get(reverse("annotation:api_gold_export"))
    body = b"".join(exported.streaming_content).decode()  # type: ignore[attr-defined]
    lines = [json.loads(line) for line in body.splitlines()]
    third = next(line for line in lines if line["id"] == "ED-0001.t3")
    assert [turn["audio"].startswith("/") for turn in third["history"]] == [True, True]
    browser = Client()
    browser.force_login(users["lead"])
    assert browser.get(third["history"][0]["audio"]).status_code == 200  # signed for this lead
    annotator = APIClient()
    annotator.force_authenticate(users["annotator"])
    assert annotator.get(reverse("annotation:api_gold")).status_code == 403
