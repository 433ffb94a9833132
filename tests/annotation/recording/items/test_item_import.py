"""Importing item files into the database: all or nothing, updates, idempotence, 10,000 rows, the command."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.recording.item_import import parse_items
from annotation.recording.items import import_items
from annotation.recording.models import Emotion, Intensity, Item, Scenario, Split
from tests.factories import ItemFactory
from webapp.lib.vocabulary import EMOTIONS, INTENSITIES, SCENARIOS, SPLITS

HEADER = "external_id,text,scenario,target_emotion,target_intensity\n"


def csv_of(*rows: str) -> bytes:
    return (HEADER + "".join(row + "\n" for row in rows)).encode()


def test_a_file_with_a_bad_row_imports_nothing(db: None) -> None:
    report = import_items(csv_of("EE-1,Hello.,implicit,sad,low", "EE-2,Hi.,implicit,gloomy,low"), "items.csv")

    assert not report.imported
    assert [str(error) for error in report.errors] == [
        "Row 3, target_emotion: 'gloomy' is not one of happy, sad, angry, surprise, disgust, fear, neutral."
    ]
    assert Item.objects.count() == 0


def test_the_admin_may_import_the_valid_rows_only(db: None) -> None:
    data = csv_of(
        "EE-1,Hello.,implicit,sad,low", "EE-2,Hi.,implicit,gloomy,low", "EE-3,Hey.,high-arousal,angry,high"
    )

    report = import_items(data, "items.csv", import_valid_rows=True)

    assert (report.imported, report.created, report.invalid_rows) == (True, 2, 1)
    assert list(Item.objects.values_list("external_id", "state")) == [
        ("EE-1", "scripted"),
        ("EE-3", "scripted"),
    ]


def test_importing_again_updates_changed_scripts_and_leaves_the_rest(db: None) -> None:
    import_items(csv_of("EE-1,Hello.,implicit,sad,low", "EE-2,Hi.,implicit,sad,low"), "items.csv")

    report = import_items(
        csv_of("EE-1,Hello.,implicit,sad,low", "EE-2,Hi there.,implicit,sad,high"), "items.csv"
    )

    assert (report.created, report.updated, report.unchanged) == (0, 1, 1)
    assert Item.objects.get(external_id="EE-2").text == "Hi there."
    assert Item.objects.get(external_id="EE-2").target_intensity == "high"


def test_a_recorded_script_cannot_change(db: None) -> None:
    ItemFactory.create(
        external_id="EE-1",
        text="Hello.",
        scenario="implicit",
        target_emotion="sad",
        state=Item.State.RECORDED,
    )

    report = import_items(
        csv_of("EE-1,Goodbye.,implicit,sad,medium", "EE-9,New.,implicit,sad,low"), "items.csv"
    )

    assert not report.imported
    assert [str(error) for error in report.errors] == [
        "Row 2, text: EE-1 is already recorded; its script can no longer change."
    ]
    assert not Item.objects.filter(external_id="EE-9").exists()
    assert Item.objects.get(external_id="EE-1").text == "Hello."


def test_ten_thousand_rows_import_in_one_go(db: None) -> None:
    scenarios = ["implicit", "audio-dominant", "high-arousal", "modality-conflict", "emotion-shift"]
    rows = [
        f"GEN-{n:05d},Generated line number {n}.,{scenarios[n % 5]},neutral,medium" for n in range(10_000)
    ]
    data = csv_of(*rows)

    started = time.perf_counter()
    report = import_items(data, "generated.csv")
    elapsed = time.perf_counter() - started

    assert (report.imported, report.created) == (True, 10_000)
    assert Item.objects.filter(scenario="emotion-shift").count() == 2000
    again = import_items(data, "generated.csv")
    assert again.unchanged == 10_000
    print(f"imported 10,000 rows in {elapsed:.2f} s")  # the figure, for whoever reads -s output


def test_the_management_command_imports_and_reports(db: None, tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(
        '{"external_id": "J-1", "text": "Hi.", "scenario": "implicit", "target_emotion": "happy"}\n'
        '{"external_id": "J-2", "text": "", "scenario": "implicit", "target_emotion": "happy"}\n'
    )
    with pytest.raises(CommandError, match="1 of 2 rows have problems"):
        call_command("import_items", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    assert Item.objects.count() == 0

    out, err = io.StringIO(), io.StringIO()
    call_command("import_items", str(path), "--import-valid-rows", stdout=out, stderr=err)

    assert "1 created, 0 updated, 0 unchanged, 1 rows left out" in out.getvalue()
    assert err.getvalue().strip() == "Line 2, text: is required."
    assert list(Item.objects.values_list("external_id", flat=True)) == ["J-1"]


def test_a_line_that_is_not_json_counts_as_a_row_read(db: None, tmp_path: Path) -> None:
    # 3 lines: one good, one that is not JSON, one missing its text -> 2 of 3 rows have problems
    path = tmp_path / "items.jsonl"
    path.write_text(
        '{"external_id": "J-1", "text": "Hi.", "scenario": "implicit", "target_emotion": "happy"}\n'
        '{"external_id": "J-2", "text": "Hi\n'
        '{"external_id": "J-3", "text": "", "scenario": "implicit", "target_emotion": "happy"}\n'
    )
    with pytest.raises(CommandError, match="2 of 3 rows have problems"):
        call_command("import_items", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    parsed = parse_items(path.read_bytes(), "items.jsonl")
    assert (parsed.rows_read, len(parsed.rows), len(parsed.errors)) == (3, 1, 2)
    only_broken = tmp_path / "broken.jsonl"
    only_broken.write_text('{"external_id": "J-2", "text": "Hi\n')
    with pytest.raises(CommandError, match="1 of 1 rows have problems"):
        call_command("import_items", str(only_broken), stdout=io.StringIO(), stderr=io.StringIO())


def test_the_file_vocabularies_match_the_models() -> None:
    assert tuple(Scenario.values) == SCENARIOS
    assert tuple(Emotion.values) == EMOTIONS
    assert tuple(Intensity.values) == INTENSITIES
    # An item file names EchoEval's splits; EchoMind's deliveries are a set of their own.
    assert tuple(value for value, _ in Split.echoeval_choices()) == SPLITS
    assert tuple(Split.values) == (*SPLITS, Split.ECHOMIND)
