"""Gold references leave with their items and audio (JSONL and HF parquet) and come back the same."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotation.gold.adjudication import adjudicate_item
from annotation.gold.export import export_gold
from annotation.gold.importing import GoldImportError, import_gold, read_rows
from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, perception, submitted, tom
from tests.factories import speech_like_wav
from tests.support.studio import empty_the_studio
from webapp.models import User
from webapp.roles import Role

SEGMENTS = [
    {"start": 0.0, "end": 0.7, "emotion": "happy", "words": "Oh great"},
    {"start": 0.7, "end": 1.5, "emotion": "sad", "words": "another Monday"},
]


@pytest.fixture
def gold_items(db: None, users, trio) -> list[Item]:
    """Two gold items: one sarcastic, one emotion-shift; three annotations each."""
    items = [
        LabellingItemFactory.create(external_id="EE-0001"),
        LabellingItemFactory.create(external_id="EE-0002", scenario="emotion-shift"),
    ]
    for item in items:
        labels = perception(emotion_segments=SEGMENTS) if item.scenario == "emotion-shift" else perception()
        for annotator in trio:
            submitted(Annotation.objects.create(item=item, annotator=annotator), perception=labels)
        Item.objects.filter(pk=item.pk).update(state=Item.State.ANNOTATING)
        adjudicate_item(
            item.pk,
            lead=users["lead"],
            perception=labels,
            tom=tom(),
            expected_gold_version=0,
            reference_response="That sounds exhausting.",
            note="clear sarcasm",
        )
    return items


def comparable(rows):
    """Rows with audio reduced to its bytes, so JSONL and parquet rows compare equal."""
    return [{**row, "audio": row["audio"]["bytes"] if row["audio"] else None} for row in rows]


def test_export_writes_jsonl_with_audio_files_and_parquet(gold_items, tmp_path) -> None:
    summary = export_gold(tmp_path)
    assert summary.rows == 2
    lines = [json.loads(line) for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
    first = lines[0]
    assert first["id"] == "EE-0001" and first["audio"] == "audio/EE-0001.wav"
    assert (tmp_path / "audio" / "EE-0001.wav").read_bytes() == speech_like_wav()
    assert first["perception"] == perception()
    assert first["tom"] == tom()
    assert (first["gold_version"], first["adjudicated_by"], first["adjudication_note"]) == (
        1,
        "lead",
        "clear sarcasm",
    )
    assert [a["annotator"] for a in first["annotations"]] == ["ana", "ben", "cleo"]
    assert comparable(read_rows(tmp_path / "data" / "test-00000-of-00001.parquet")) == comparable(
        read_rows(tmp_path / "gold.jsonl")
    )


def test_the_export_folder_is_a_hugging_face_dataset(gold_items, tmp_path, monkeypatch) -> None:
    import datasets

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    export_gold(tmp_path / "export")
    dataset = datasets.load_dataset(str(tmp_path / "export"), split="test", cache_dir=str(tmp_path / "cache"))
    dataset = dataset.cast_column("audio", datasets.Audio(decode=False))
    assert dataset.num_rows == 2
    assert dataset[1]["perception"]["emotion_segments"] == SEGMENTS
    assert dataset[0]["audio"]["bytes"] == speech_like_wav()
    assert dataset[0]["tom"]["recommended_strategies"] == ["emotional-validation", "reflection-of-feelings"]


@pytest.mark.parametrize("source", ["gold.jsonl", "data/test-00000-of-00001.parquet"])
def test_export_then_import_into_an_empty_studio_round_trips(gold_items, users, tmp_path, source) -> None:
    export_gold(tmp_path / "first")
    before = comparable(read_rows(tmp_path / "first" / "gold.jsonl"))
    empty_the_studio()
    summary = import_gold(tmp_path / "first" / source, imported_by=users["admin"])
    assert (summary.rows, summary.items_created, summary.takes_created, summary.gold_created) == (2, 2, 2, 2)
    assert (summary.annotations_imported, summary.annotations_skipped) == (6, 0)
    export_gold(tmp_path / "second")
    assert comparable(read_rows(tmp_path / "second" / "gold.jsonl")) == before
    assert set(Item.objects.values_list("state", flat=True)) == {Item.State.GOLD}
    assert GoldReference.objects.filter(imported=True).count() == 2


def test_importing_over_existing_gold_adds_a_version(gold_items, users, tmp_path) -> None:
    export_gold(tmp_path)
    import_gold(tmp_path, imported_by=users["admin"])
    versions = GoldReference.objects.filter(item=gold_items[0]).order_by("version")
    assert [(gold.version, gold.is_current, gold.imported) for gold in versions] == [
        (1, False, False),
        (2, True, True),
    ]


def test_unknown_annotators_are_skipped_and_counted(gold_items, users, tmp_path) -> None:
    export_gold(tmp_path, parquet=False)
    empty_the_studio()
    User.objects.filter(username__in=["ana", "ben"]).delete()
    summary = import_gold(tmp_path / "gold.jsonl", imported_by=users["admin"])
    assert (summary.annotations_imported, summary.annotations_skipped) == (2, 4)
    assert summary.unknown_annotators == {"ana", "ben"}


def test_a_bad_row_imports_nothing_and_names_row_and_field(gold_items, users, tmp_path) -> None:
    export_gold(tmp_path, parquet=False)
    lines = (tmp_path / "gold.jsonl").read_text().splitlines()
    second = json.loads(lines[1])
    second["perception"]["emotion"] = "smug"
    second["tom"]["recommended_strategies"] = []
    (tmp_path / "gold.jsonl").write_text(lines[0] + "\n" + json.dumps(second) + "\n")
    empty_the_studio()
    with pytest.raises(GoldImportError) as raised:
        import_gold(tmp_path / "gold.jsonl", imported_by=users["admin"])
    problems = {(problem.row, problem.field) for problem in raised.value.problems}
    assert (2, "perception.emotion") in problems
    assert (2, "tom.recommended_strategies") in problems
    assert not Item.objects.exists()


def test_the_management_commands_round_trip(gold_items, users, tmp_path, make_user, capsys) -> None:
    call_command("export_gold", str(tmp_path), "--format", "jsonl")
    assert "Exported 2 gold references" in capsys.readouterr().out
    empty_the_studio()
    call_command("import_gold", str(tmp_path), "--as", "admin")
    assert "Imported 2 rows: 2 new items" in capsys.readouterr().out
    assert GoldReference.objects.count() == 2


def test_assign_annotators_command(db: None, make_user, capsys) -> None:
    for name in ("x1", "x2", "x3"):
        make_user(Role.ANNOTATOR, name)
    LabellingItemFactory.create(recording=None)
    call_command("assign_annotators")
    assert "Assigned 3 annotations over 1 items." in capsys.readouterr().out


def test_emotion_shift_segments_are_exported_as_their_own_clips(gold_items, tmp_path) -> None:
    from annotation.audio.joining import wav_duration

    export_gold(tmp_path, parquet=False)

    rows = {row["id"]: row for row in map(json.loads, (tmp_path / "gold.jsonl").read_text().splitlines())}
    assert rows["EE-0001"]["segment_audio"] == []
    clips = rows["EE-0002"]["segment_audio"]
    assert [(clip["start"], clip["end"], clip["emotion"]) for clip in clips] == [
        (0.0, 0.7, "happy"),
        (0.7, 1.5, "sad"),
    ]
    assert [clip["audio"] for clip in clips] == ["audio/EE-0002.segment1.wav", "audio/EE-0002.segment2.wav"]
    durations = [wav_duration((tmp_path / clip["audio"]).read_bytes()) for clip in clips]
    assert durations == [pytest.approx(0.7, abs=0.01), pytest.approx(0.8, abs=0.01)]
    assert rows["EE-0002"]["perception"]["emotion_segments"] == SEGMENTS  # the gold itself unchanged
