"""EchoEval sent out: a folder `datasets.load_from_disk` reads back with the same rows and audio, and
a VoiceBench-style JSONL whose harness result (VoiceBench's own main.py shape) re-imports to the
same outputs."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotation.gold.export import export_gold
from annotation.gold.harness_export import save_hf_disk, write_voicebench
from annotation.gold.importing import read_rows
from annotation.recording.models import Item
from evaluation.outputs.harnesses import VOICEBENCH
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import ModelOutput, System
from tests.annotation.gold.test_transfer import SEGMENTS, gold_items  # noqa: F401 (a fixture)
from tests.factories import speech_like_wav, tiny_wav
from webapp.storage import new_media_key, save_media

pytestmark = pytest.mark.usefixtures("media_root")


def test_the_echoeval_export_loads_from_disk_with_the_same_rows_and_audio(gold_items, tmp_path) -> None:  # noqa: F811
    import datasets

    export_gold(tmp_path)
    assert save_hf_disk(tmp_path, tmp_path / "hf") == ["test"]
    loaded = datasets.load_from_disk(str(tmp_path / "hf"))["test"]
    written = read_rows(tmp_path / "gold.jsonl")
    assert loaded.num_rows == len(written) == 2
    for row, expected in zip(loaded, written, strict=True):
        assert row["audio"]["bytes"] == expected["audio"]["bytes"] == speech_like_wav()
        assert {name: row[name] for name in ("id", "split", "perception", "tom")} == {
            name: expected[name] for name in ("id", "split", "perception", "tom")
        }
    assert loaded[1]["perception"]["emotion_segments"] == SEGMENTS
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "license: cc-by-nc-4.0" in card and "- test" in card
    assert "license: cc-by-nc-4.0" in (tmp_path / "README.md").read_text()


def test_a_voicebench_run_of_the_export_reimports_to_the_same_outputs(gold_items, tmp_path) -> None:  # noqa: F811
    # Each item its own recording, so each audio checksum names one item.
    second = Item.objects.get(external_id="EE-0002").recording
    assert second is not None
    second.audio_key = save_media(new_media_key("take", "wav"), tiny_wav(1.0, 300.0))
    second.save()
    assert write_voicebench(tmp_path) == 2
    rows = [json.loads(line) for line in (tmp_path / "echoeval.jsonl").read_text().splitlines()]
    assert [row["item_id"] for row in rows] == ["EE-0001", "EE-0002"]
    assert (tmp_path / rows[0]["audio"]).read_bytes() == speech_like_wav()
    assert rows[0]["prompt"] == Item.objects.get(external_id="EE-0001").text
    # What VoiceBench's main.py writes: every field but "audio", plus the system's "response".
    result = "\n".join(
        json.dumps(
            {**{k: v for k, v in row.items() if k != "audio"}, "response": f"Reply to {row['item_id']}"}
        )
        for row in rows
    ).encode()
    system = System.objects.create(name="voicebench-run", text_only=True)
    report = import_outputs(system, "echoeval-v1", result, None, format_name=VOICEBENCH)
    assert report.imported and report.errors == [] and report.created == 2
    outputs = dict(ModelOutput.objects.values_list("item__external_id", "response_text"))
    assert outputs == {"EE-0001": "Reply to EE-0001", "EE-0002": "Reply to EE-0002"}
    # Placed by the audio checksum alone, the same rows land on the same items.
    by_checksum = "\n".join(
        json.dumps(
            {"audio_sha256": row["audio_sha256"], "prompt": "", "response": f"Reply to {row['item_id']}"}
        )
        for row in rows
    ).encode()
    again = import_outputs(system, "echoeval-v1", by_checksum, None, format_name=VOICEBENCH)
    assert again.imported and (again.created, again.unchanged) == (0, 2)


def test_the_command_writes_every_format(gold_items, tmp_path) -> None:  # noqa: F811
    call_command("export_gold", str(tmp_path), "--format", "all")
    assert (tmp_path / "hf" / "dataset_dict.json").exists()
    assert (tmp_path / "voicebench" / "echoeval.jsonl").read_text().count("\n") == 2
