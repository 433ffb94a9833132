"""Training outside the web app: export a snapshot, train with `python -m ml.cli` (also under torchrun), register."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command

from ml.cli import main
from ml.jobs.models import Checkpoint, DatasetSnapshot
from tests.conftest import ROOT
from tests.ml.jobs.support import TrainingItemFactory
from webapp.models import User

pytestmark = pytest.mark.slow


@pytest.fixture
def export(db: None, ml_storage: Path, make_user: Callable[..., User], tmp_path: Path) -> Path:
    """Return the records file of an SFT export of two ready items."""
    actor = make_user(None, "actor-e")
    TrainingItemFactory.create(external_id="TR-0", recording__actor=actor)
    TrainingItemFactory.create(external_id="TR-1", recording__actor=actor, pitch_hz=220.0)
    call_command("export_training_data", str(tmp_path / "export"), "--splits", "train")
    return tmp_path / "export" / "records.jsonl"


def _tiny_sft_arguments(export: Path, output: Path, batch_size: int) -> list[str]:
    """Return the ``ml.cli`` arguments of a two-step SFT run of the tiny model on the CPU."""
    return [
        "sft",
        "--data",
        str(export),
        "--model",
        "tiny",
        "--output",
        str(output),
        "--max-steps",
        "2",
        "--batch-size",
        str(batch_size),
        "--lora-rank",
        "4",
        "--device",
        "cpu",
    ]


def test_a_cli_run_on_an_export_registers_as_a_checkpoint_of_that_snapshot(
    export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # when SFT runs from the command line on the export
    output = tmp_path / "sft-cli"
    status = main(_tiny_sft_arguments(export, output, batch_size=2))

    # then it printed each step and saved a checkpoint naming the exported snapshot
    assert status == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [line["step"] for line in lines if "step" in line] == [1.0, 2.0]
    assert lines[-1]["done"] is True
    snapshot = DatasetSnapshot.objects.get()
    metadata = json.loads((output / "metadata.json").read_text())
    assert metadata["dataset_snapshot_ids"] == [str(snapshot.pk)]

    # when an admin registers it, then the app knows where it came from
    call_command("register_checkpoint", str(output), "--kind", "sft", "--name", "sft-from-cli")
    checkpoint = Checkpoint.objects.get(name="sft-from-cli")
    assert (checkpoint.uri, checkpoint.dataset_snapshot, checkpoint.arch) == (
        str(output),
        snapshot,
        "qwen2_audio",
    )


def test_torchrun_trains_on_two_processes_and_saves_once(export: Path, tmp_path: Path) -> None:
    output = tmp_path / "sft-ddp"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "ml.cli",
        *_tiny_sft_arguments(export, output, batch_size=1),
    ]
    result = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # rank 0 says it is done once, after saving; then both ranks leave
    assert result.stdout.count('"done": true') == 1
    metadata = json.loads((output / "metadata.json").read_text())
    assert metadata["extra"]["world_size"] == 2
    assert metadata["metrics"]["steps"] == 2


def test_a_cli_rl_run_records_the_paper_variant_it_ran(export: Path, tmp_path: Path) -> None:
    output = tmp_path / "rl-cli"
    arguments = ["rl", "--data", str(export), "--model", "tiny", "--output", str(output)]
    options = ["--max-steps", "1", "--group-size", "2", "--max-new-tokens", "8", "--lora-rank", "4"]

    assert main([*arguments, *options, "--device", "cpu", "--ablation", "vanilla_grpo"]) == 0

    config = json.loads((output / "metadata.json").read_text())["config"]
    assert (config["ablation"], config["mode"]) == ("vanilla_grpo", "grpo")


def test_a_cli_rl_run_with_lora_rank_0_trains_every_weight(export: Path, tmp_path: Path) -> None:
    output = tmp_path / "rl-full"
    arguments = ["rl", "--data", str(export), "--model", "tiny", "--output", str(output)]
    options = ["--max-steps", "1", "--group-size", "2", "--max-new-tokens", "8", "--lora-rank", "0"]

    assert main([*arguments, *options, "--device", "cpu"]) == 0

    metadata = json.loads((output / "metadata.json").read_text())
    assert metadata["config"]["lora"] is None
    assert (output / "model.safetensors").is_file()
