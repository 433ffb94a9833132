"""Dialogue JSONL import and export: one dialogue per line, all or nothing, round trip, recorded turns fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.dialogues.transfer import export_dialogues, import_dialogues
from annotation.recording.models import Dialogue, Item
from tests.factories import DialogueFactory, ItemFactory, TakeFactory


def turn(text: str = "I lost my job today.", **extra: object) -> object:
    return {
        "text": text,
        "scenario": "implicit",
        "target_emotion": "sad",
        "expected_strategy": "validation",
        **extra,
    }


def jsonl(*dialogues: object) -> bytes:
    return "".join(json.dumps(dialogue) + "\n" for dialogue in dialogues).encode()


def test_a_dialogue_becomes_numbered_turn_items_with_its_trajectory(db: None) -> None:
    line = {
        "dialogue_id": "ED-1",
        "split": "train",
        "topic": "job loss",
        "voice": "en-us+f3",
        "turns": [
            turn("I lost my job today.", target_intensity="high", reference_reply="I'm so sorry."),
            turn("But maybe it's a chance?", target_emotion="surprise", strategy="cognitive reframing"),
        ],
    }

    report = import_dialogues(jsonl(line))

    assert report.imported and report.created == 1
    dialogue = Dialogue.objects.get(external_id="ED-1")
    turns = list(dialogue.turns.order_by("turn"))
    assert [(item.external_id, item.turn, item.split) for item in turns] == [
        ("ED-1.t1", 1, "train"),
        ("ED-1.t2", 2, "train"),
    ]
    assert (turns[0].target_intensity, turns[0].reference_reply) == ("high", "I'm so sorry.")
    assert (turns[1].target_emotion, turns[1].expected_strategy) == ("surprise", "cognitive reframing")
    assert list(Item.objects.single_turn()) == []


def test_one_bad_turn_anywhere_imports_nothing_and_says_where(db: None) -> None:
    good = {"dialogue_id": "ED-1", "turns": [turn()]}
    bad = {"dialogue_id": "ED-2", "turns": [turn(), turn(target_emotion="gloomy")]}

    report = import_dialogues(jsonl(good, bad))

    assert not report.imported
    assert [str(error) for error in report.errors] == [
        "Line 2, turns[2].target_emotion: 'gloomy' is not one of happy, sad, angry, surprise, disgust, fear, neutral."
    ]
    assert not Dialogue.objects.exists() and not Item.objects.exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json\n", "Line 1: is not valid JSON"),
        (b"[1]\n", "Line 1: must be one JSON object"),
        (
            json.dumps({"dialogue_id": "ED-1", "turns": []}).encode(),
            "Line 1, turns: must be a list of 1 or more",
        ),
        (
            json.dumps({"dialogue_id": "ED-1", "turns": [turn()] * 6}).encode(),
            "holds 6 turns; a dialogue may hold at most 5",
        ),
        (json.dumps({"turns": [turn()]}).encode(), "Line 1, dialogue_id: is required."),
        (json.dumps({"dialogue_id": "../x", "turns": [turn()]}).encode(), "is not a usable id"),
        (
            json.dumps(
                {
                    "dialogue_id": "ED-1",
                    "turns": [{"text": "Hi", "scenario": "implicit", "target_emotion": "sad"}],
                }
            ).encode(),
            "turns[1].expected_strategy: is required",
        ),
        (json.dumps({"dialogue_id": "ED-1", "turns": ["Hi"]}).encode(), "turns[1]: must be an object"),
        (
            json.dumps({"dialogue_id": "ED-1", "colour": "red", "turns": [turn()]}).encode(),
            "unknown key colour",
        ),
        (json.dumps({"dialogue_id": "ED-1", "turns": [turn(text="a\x00b")]}).encode(), "NUL character"),
        (b"\xff\xfe{}", "UTF-16"),
        (b"", "The file holds no dialogues."),
    ],
)
def test_each_malformed_file_is_refused_with_a_clear_message(db: None, line: bytes, message: str) -> None:
    report = import_dialogues(line)

    assert not report.imported
    assert message in " ".join(str(error) for error in report.errors)
    assert not Item.objects.exists()


def test_repeated_ids_and_taken_turn_ids_are_refused(db: None) -> None:
    ItemFactory.create(external_id="ED-9.t1")
    repeated = import_dialogues(
        jsonl({"dialogue_id": "ED-1", "turns": [turn()]}, {"dialogue_id": "ed-1", "turns": [turn()]})
    )
    taken = import_dialogues(jsonl({"dialogue_id": "ED-9", "turns": [turn()]}))

    assert [str(error) for error in repeated.errors] == [
        "Line 2, dialogue_id: ed-1 already appears on line 1."
    ]
    assert [str(error) for error in taken.errors] == [
        "Line 1, turns: the turn id ED-9.t1 is already used by another item."
    ]
    assert not Dialogue.objects.exists()


def test_the_turn_limit_is_a_setting(db: None, settings: object) -> None:
    settings.DIALOGUE_MAX_TURNS = 2  # type: ignore[attr-defined]

    report = import_dialogues(jsonl({"dialogue_id": "ED-1", "turns": [turn()] * 3}))

    assert "at most 2" in str(report.errors[0])


def test_export_imports_back_unchanged(db: None) -> None:
    DialogueFactory.create(external_id="ED-1", turns=3)
    DialogueFactory.create(external_id="ED-2", turns=5)
    exported = "".join(export_dialogues()).encode()

    again = import_dialogues(exported)

    assert (again.imported, again.unchanged, again.created, again.replaced) == (True, 2, 0, 0)
    first = json.loads(exported.splitlines()[0])
    assert [t["expected_strategy"] for t in first["turns"]] == ["emotional validation"] * 3
    assert len(json.loads(exported.splitlines()[1])["turns"]) == 5


def test_a_dialogue_may_change_until_a_turn_is_recorded(db: None) -> None:
    DialogueFactory.create(external_id="ED-1", turns=3)
    shorter = import_dialogues(jsonl({"dialogue_id": "ED-1", "turns": [turn("New first turn.")]}))
    assert shorter.replaced == 1
    assert list(Item.objects.filter(dialogue__external_id="ED-1").values_list("text", flat=True)) == [
        "New first turn."
    ]

    TakeFactory.create(item=Item.objects.get(external_id="ED-1.t1"))
    refused = import_dialogues(jsonl({"dialogue_id": "ED-1", "turns": [turn("Another.")]}))

    assert not refused.imported
    assert "already being recorded" in str(refused.errors[0])


def test_the_commands_import_and_export(db: None, tmp_path: Path) -> None:
    source = tmp_path / "dialogues.jsonl"
    source.write_bytes(jsonl({"dialogue_id": "ED-1", "turns": [turn(), turn("And now this.")]}))
    call_command("import_dialogues", str(source))
    target = tmp_path / "out.jsonl"
    call_command("export_dialogues", str(target))

    assert json.loads(target.read_text())["turns"][1]["text"] == "And now this."
    source.write_bytes(b"{oops\n")
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("import_dialogues", str(source))


def test_the_item_import_leaves_dialogue_turns_alone(db: None) -> None:
    from annotation.recording.items import import_items

    DialogueFactory.create(external_id="ED-1", turns=1)

    report = import_items(
        b"external_id,text,scenario,target_emotion\nED-1.t1,Changed.,implicit,sad\n", "items.csv"
    )

    assert not report.imported
    assert [str(error) for error in report.errors] == [
        "Row 2, external_id: ED-1.t1 is a turn of a dialogue; change it by importing its dialogue again."
    ]
