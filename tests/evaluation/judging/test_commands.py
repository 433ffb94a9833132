"""Management commands: import outputs from a folder of audio, print the leaderboard."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation.outputs.models import ModelOutput, System
from tests.evaluation.judging_support import BenchmarkItemFactory, jsonl
from tests.factories import JudgeConfigFactory, JudgementFactory, tiny_wav

pytestmark = pytest.mark.usefixtures("media_root")


def test_import_outputs_from_a_folder_then_export_the_leaderboard(db: None, tmp_path: Path) -> None:
    BenchmarkItemFactory.create(external_id="EE-1")
    rows = tmp_path / "outputs.jsonl"
    rows.write_bytes(jsonl({"item_id": "EE-1", "output": "I hear you."}))
    (tmp_path / "audio" / "nested").mkdir(parents=True)
    (tmp_path / "audio" / "nested" / "EE-1.wav").write_bytes(tiny_wav())
    out = io.StringIO()
    call_command(
        "import_outputs", "Omni-X", str(rows), "--audio", str(tmp_path / "audio"), "--create", stdout=out
    )
    assert out.getvalue() == "Omni-X (echoeval-v1): 1 new, 0 changed, 0 unchanged, 0 removed, 0 skipped\n"
    output = ModelOutput.objects.get(system__name="Omni-X")
    assert output.response_text == "I hear you." and output.response_audio_key

    judge = JudgeConfigFactory.create(name="judge")
    JudgementFactory.create(output=output, stage="perception", judge_config=judge, score=6)
    csv_out = io.StringIO()
    call_command("export_leaderboard", "judge", stdout=csv_out)
    assert csv_out.getvalue().splitlines()[1].startswith("Omni-X,6.0000,1,0,")


def test_a_bad_file_is_refused_with_its_problems(db: None, tmp_path: Path) -> None:
    System.objects.create(name="Omni-X", text_only=True)
    rows = tmp_path / "outputs.jsonl"
    rows.write_bytes(jsonl({"item_id": "EE-404", "output": "?"}))
    errors = io.StringIO()
    with pytest.raises(CommandError, match="Nothing imported: 1 problem"):
        call_command("import_outputs", "Omni-X", str(rows), stderr=errors)
    assert errors.getvalue() == "error: line 1 (EE-404): unknown item: no item has this id\n"
