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
