"""Each EchoMind set leaves as a Hugging Face folder that load_from_disk and parquet read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from evaluation.echomind.transfer import import_layout
from tests.evaluation.echomind.fixture import audio_name, echomind_files
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_each_echomind_set_loads_from_disk_and_as_parquet(media_root: Path, tmp_path: Path) -> None:
    import datasets
    import pyarrow.parquet as pq

    files = echomind_files()
    assert import_layout(files, UserFactory.create()).imported
    call_command("export_echomind", str(tmp_path))
    para = datasets.load_from_disk(str(tmp_path / "echomind-paralinguistic"))["test"]
    assert para.num_rows == 5  # id_1: three deliveries, id_2: two
    target = next(row for row in para if row["case_id"] == "id_1" and row["role"] == "target")
    name = audio_name(1, "sad_tone", "weather", "target")
    assert target["audio"] == {"bytes": files[f"audio/{name}"], "path": name}
    assert [q["question_id"] for q in target["questions"]] == ["r1", "u1"]
    assert target["questions"][1]["options"] == ["Happy", "Sad", "Angry", "Neutral"]
    speaker = datasets.load_from_disk(str(tmp_path / "echomind-speaker"))["test"]
    assert sorted(speaker["role"]) == ["alternative", "target"]
    parquet = pq.read_table(tmp_path / "echomind-paralinguistic" / "data" / "test-00000-of-00001.parquet")
    assert parquet.to_pylist() == para.to_list()
    assert "license: cc-by-nc-4.0" in (tmp_path / "echomind-speaker" / "README.md").read_text()
    assert json.loads(files["script_info_speaker.json"])[0]["id"] == speaker[0]["case_id"]


def test_a_voicebench_run_of_each_echomind_set_reimports_to_the_same_replies(
    media_root: Path, tmp_path: Path
) -> None:
    import hashlib

    from evaluation.echomind.answers import import_answers
    from evaluation.echomind.hf_export import voicebench_name, write_echomind_voicebench
    from evaluation.echomind.models import Reply
    from tests.factories import SystemFactory

    files = echomind_files()
    assert import_layout(files, UserFactory.create()).imported
    call_command("export_echomind", str(tmp_path))
    folder = tmp_path / "voicebench"
    para = [
        json.loads(line) for line in (folder / voicebench_name("paralinguistic")).read_text().splitlines()
    ]
    speaker = [json.loads(line) for line in (folder / voicebench_name("speaker")).read_text().splitlines()]
    assert (len(para), len(speaker)) == (5, 2)  # one row a delivery, as the HF folders hold
    # every row names its audio, and the file there is the delivery's accepted take
    for row in para + speaker:
        data = (folder / row["audio"]).read_bytes()
        assert data == files[f"audio/{row['delivery']}"]
        assert hashlib.sha256(data).hexdigest() == row["audio_sha256"]
        assert row["prompt"] and row["prompt_strength"] == "none"

    # a harness runs the file and adds its "response" to each row, as VoiceBench writes them
    answered = [{**row, "response": f"reply to {row['case_id']} {row['role']}"} for row in para + speaker]
    system = SystemFactory.create(name="voicebench-run")
    report = import_answers(system, "\n".join(json.dumps(row) for row in answered).encode())
    assert report.problems == [] and report.replies == 7
    assert sorted(
        Reply.objects.filter(system=system).values_list("delivery__audio_file", "prompt", "text")
    ) == sorted((row["delivery"], "none", row["response"]) for row in answered)
    # and the same file again replaces them with the same replies (nothing new)
    assert import_answers(system, "\n".join(json.dumps(row) for row in answered).encode()).replies == 7
    assert Reply.objects.in_use().filter(system=system).count() == 7
    assert write_echomind_voicebench(tmp_path / "again") == {"paralinguistic": 5, "speaker": 2}
