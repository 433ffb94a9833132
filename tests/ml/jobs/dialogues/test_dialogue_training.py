"""`python -m ml.cli sft` trains on an export of multi-turn gold; the inference job answers dialogues."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.recording.models import Item
from evaluation.outputs.models import ModelOutput, System
from ml.cli import main
from ml.core.training_records import read_records, read_wav
from ml.jobs.launch import INFERENCE_JOB, start_ml_job
from tests.factories import ItemFactory
from tests.ml.jobs.dialogues.support import recorded_dialogue
from tests.ml.jobs.support import TrainingItemFactory, finished
from webapp.jobs import JobStatus
from webapp.models import User
from webapp.roles import Role
from webapp.storage import read_media

pytestmark = [pytest.mark.usefixtures("ml_storage"), pytest.mark.slow]


def test_the_cli_trains_a_tiny_model_on_exported_multi_turn_gold(
    db: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given multi-turn gold exported as training data
    recorded_dialogue("DL-1", turns=3)
    recorded_dialogue("DL-2", turns=2)
    export = tmp_path / "export"
    call_command("export_training_data", str(export), "--splits", "train", "--purpose", "sft")
    rows = read_records(export / "records.jsonl")
    assert sorted(len(row.record.history) for row in rows) == [0, 0, 1, 1, 2]

    # when the command line trains on it
    output = tmp_path / "sft-dialogues"
    arguments = ["sft", "--data", str(export / "records.jsonl"), "--model", "tiny", "--output", str(output)]
    status = main(
        [
            *arguments,
            "--max-steps",
            "6",
            "--batch-size",
            "5",
            "--learning-rate",
            "0.005",
            "--lora-rank",
            "0",
            "--lambda-aaa",
            "0.1",
            "--device",
            "cpu",
        ]
    )

    # then every step's loss is finite, it falls, and the checkpoint is written
    assert status == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    steps = [line for line in printed if "step" in line]
    losses = [step["loss"] for step in steps]
    assert len(losses) == 6 and all(math.isfinite(loss) for loss in losses)
    assert losses[-1] < losses[0]
    assert all(0 < step["rho"] < 1 for step in steps)
    assert (output / "metadata.json").is_file()


@pytest.mark.parametrize("history", ["gold", "own"])
def test_dialogue_inference_stores_one_voiced_output_per_turn(
    db: None, make_user: Callable[..., User], history: str
) -> None:
    # given two test dialogues, a single test item and that system's earlier single-item output
    recorded_dialogue("DL-1", turns=3, split="test")
    recorded_dialogue("DL-2", turns=2, split="test", gold_turns=())
    single = TrainingItemFactory.create(external_id="EE-1", split="test")
    system = System.objects.create(name="EchoChat dialogues", category=System.Category.OURS)
    ModelOutput.objects.create(system=system, item=single, response_text="kept")
    ItemFactory.create(external_id="EE-unrecorded", split="test")

    job = finished(
        start_ml_job(
            INFERENCE_JOB,
            started_by=make_user(Role.ADMIN),
            parameters={
                "start_from": "tiny",
                "system_name": system.name,
                "benchmark_version": "echoeval-v1",
                "max_new_tokens": 8,
                "batch_size": 2,
                "device": "cpu",
                "dtype": "float32",
                "dialogue_history": history,
            },
            splits=["test"],
        )
    )

    # then each turn has one output, voiced, and the single item's output is untouched
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.parameters["dialogue_history"] == history
    assert job.result is not None
    assert (job.result["outputs"], job.result["dialogues"], job.result["dialogue_history"]) == (5, 2, history)
    turns = ModelOutput.objects.filter(system=system, item__dialogue__isnull=False)
    assert sorted(turns.values_list("item__external_id", flat=True)) == [
        "DL-1.t1",
        "DL-1.t2",
        "DL-1.t3",
        "DL-2.t1",
        "DL-2.t2",
    ]
    samples, rate = read_wav(read_media(turns.first().response_audio_key))  # type: ignore[union-attr]
    assert rate > 0 and len(samples) > 0
    assert ModelOutput.objects.get(system=system, item=single).response_text == "kept"
    assert not Item.objects.get(external_id="EE-unrecorded").model_outputs.exists()


def test_a_single_item_run_leaves_dialogue_turns_and_their_outputs_alone(
    db: None, make_user: Callable[..., User]
) -> None:
    recorded_dialogue("DL-1", turns=2, split="test")
    TrainingItemFactory.create(external_id="EE-1", split="test")
    system = System.objects.create(name="EchoChat single", category=System.Category.OURS)
    turn = Item.objects.get(external_id="DL-1.t1")
    ModelOutput.objects.create(system=system, item=turn, response_text="from a dialogue run")

    job = finished(
        start_ml_job(
            INFERENCE_JOB,
            started_by=make_user(Role.ADMIN),
            parameters={
                "start_from": "tiny",
                "system_name": system.name,
                "benchmark_version": "echoeval-v1",
                "max_new_tokens": 4,
                "batch_size": 1,
                "device": "cpu",
                "dtype": "float32",
            },
            splits=["test"],
        )
    )

    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result is not None and (job.result["outputs"], job.result["dialogue_history"]) == (1, "")
    answered = ModelOutput.objects.filter(system=system).values_list("item__external_id", "response_text")
    assert sorted(answered)[0] == ("DL-1.t1", "from a dialogue run")
    assert [item for item, _ in sorted(answered)] == ["DL-1.t1", "EE-1"]
