"""Reading item files (pure but for repeated ids): every bad row is reported by row and field; good rows come out normalised."""

from __future__ import annotations

import json

import pytest

from annotation.recording.item_import import ItemRow, parse_items
from annotation.recording.items import import_items
from annotation.recording.models import Item

HEADER = "external_id,text,scenario,target_emotion,emotion_variant,target_intensity,instructions,split\n"


def test_a_good_csv_gives_normalised_rows() -> None:
    data = (
        HEADER
        + 'EE-1,"Oh great, another meeting.",Modality conflict,Angry,sarcasm,HIGH,"Drawn-out ""great"".",dev\n'
        + "EE-2,The package arrived.,audio_dominant,sadness,,,,\n"
    ).encode()

    parsed = parse_items(data, "items.csv")

    assert parsed.errors == []
    assert parsed.rows == [
        ItemRow(
            2,
            "EE-1",
            "Oh great, another meeting.",
            "modality-conflict",
            "angry",
            "sarcasm",
            "high",
            'Drawn-out "great".',
            "dev",
        ),
        ItemRow(3, "EE-2", "The package arrived.", "audio-dominant", "sad", "", "medium", "", "test"),
    ]


def test_jsonl_with_aliases_and_a_utf8_bom() -> None:
    lines = [
        {
            "id": "EE-7",
            "script": "I can't find her!",
            "scenario": "high-arousal",
            "emotion": "fear",
            "variant": "panic",
            "intensity": "high",
        },
        {"id": 8, "script": "It was just my sister.", "scenario": "emotional shift", "emotion": "happy"},
    ]
    data = "\ufeff".encode() + "\n\n".join(json.dumps(line) for line in lines).encode()

    parsed = parse_items(data, "items.jsonl")

    assert parsed.errors == []
    assert [(row.row, row.external_id, row.scenario, row.target_emotion) for row in parsed.rows] == [
        (1, "EE-7", "high-arousal", "fear"),
        (3, "8", "emotion-shift", "happy"),
    ]


@pytest.mark.django_db
def test_each_problem_names_its_row_and_field() -> None:
    data = (
        HEADER
        + "EE-1,Fine text.,sarcastic,angry,,,,\n"  # row 2: unknown scenario
        + "EE-2,,implicit,joyful,,extreme,,\n"  # row 3: no text, unknown emotion and intensity
        + "EE 3,Text.,implicit,sad,,,,final\n"  # row 4: bad id, unknown split
        + "EE-1,Again.,implicit,sad,,,,\n"  # row 5: repeats row 2's id
    ).encode()

    # Repeated ids need every row at once: the import finds them in its staging table (SQL).
    parsed = import_items(data, "items.csv")

    assert [str(error) for error in parsed.errors] == [
        "Row 2, scenario: 'sarcastic' is not one of implicit, audio-dominant, high-arousal, modality-conflict, "
        "emotion-shift.",
        "Row 3, text: is required.",
        "Row 3, target_emotion: 'joyful' is not one of happy, sad, angry, surprise, disgust, fear, neutral.",
        "Row 3, target_intensity: 'extreme' is not one of low, medium, high.",
        "Row 4, external_id: 'EE 3' is not a usable id: up to 64 letters, digits, '.', '_' or '-', starting "
        "with a letter or digit.",
        "Row 4, split: 'final' is not one of test, dev, train.",
        "Row 5, external_id: EE-1 already appears on row 2.",
    ]
    assert not parsed.imported and not Item.objects.exists()
    assert parsed.invalid_rows == 4


def test_jsonl_problems_name_the_line() -> None:
    data = (
        b'{"external_id": "A", "text": "t", "scenario": "implicit", "target_emotion": "sad"}\nnot json\n[1]\n'
    )
    data += b'{"external_id": "B", "text": 5, "scenario": "implicit", "target_emotion": "sad", "mood": "x"}\n'

    parsed = parse_items(data, "items.jsonl")

    assert [str(error) for error in parsed.errors] == [
        "Line 2: is not valid JSON (Expecting value).",
        "Line 3: must be one JSON object per line.",
        "Line 4: Unknown column 'mood'; item files have external_id, text, scenario, target_emotion, "
        "emotion_variant, target_intensity, instructions, split.",
    ]
    assert [row.external_id for row in parsed.rows] == ["A"]


def test_file_level_problems_stop_everything() -> None:
    assert [str(e) for e in parse_items(b"external_id,text,scenario\nA,t,implicit\n", "x.csv").errors] == [
        "Missing column: target_emotion."
    ]
    assert parse_items(b"external_id,text,scenario,target_emotion\n", "x.csv").file_errors[0].message == (
        "The file holds no items."
    )
    not_utf8 = parse_items(HEADER.encode() + b"A,t,implicit,sad,,,,\nB,caf\xe9,implicit,sad,,,,\n", "x.csv")
    assert str(not_utf8.errors[0]) == (
        "Line 3 is not UTF-8 text (byte 6 of the line cannot be read). Save the file as UTF-8."
    )
    too_wide = parse_items(HEADER.encode() + b"A,t,implicit,sad,,,,,extra\n", "x.csv")
    assert str(too_wide.errors[0]) == "Row 2: has 9 cells but the header names 8."


def test_the_format_comes_from_the_content_when_the_name_does_not_say() -> None:
    line = b'{"external_id": "A", "text": "t", "scenario": "implicit", "target_emotion": "sad"}'
    assert parse_items(line, "upload").format == "jsonl"
    assert (
        parse_items(b"external_id\ttext\tscenario\ttarget_emotion\nA\tt\timplicit\tsad\n", "upload")
        .rows[0]
        .text
        == "t"
    )
