"""SFT + AAA on the tiny model, inference with its checkpoint, and the judges scoring those outputs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.rubrics import SUBSCORE_RANGES
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import ModelOutput
from ml.core.training_records import read_wav
from ml.jobs.launch import INFERENCE_JOB, SFT_JOB, start_ml_job
from ml.jobs.models import Checkpoint, DatasetSnapshot
from tests.evaluation.judging_support import stage_of
from tests.ml.jobs.support import TrainingItemFactory, finished, tiny_sft_parameters
from tests.support.fake_chat_server import RecordedRequest, Reply, json_reply, running_chat_server
from webapp.lib.output_format import parse_output
from webapp.models import JobStatus, User
from webapp.storage import read_media

pytestmark = pytest.mark.slow

# Short gold so the tiny model learns the whole output format in a few seconds of training.
SHORT_GOLD: dict[str, Any] = {
    "perception": {"emotion": "sad", "intensity": "medium"},
    "tom": {
        "context": "alone",
        "latent_need": "company",
        "core_demand": "be heard",
        "recommended_strategies": ["emotional-validation"],
    },
    "reference_response": "I am here.",
}


def full_marks(request: RecordedRequest) -> Reply:
    """Answer a rubric prompt with every sub-score at its maximum."""
    ranges = SUBSCORE_RANGES[stage_of(request)]
    return json_reply({"subscores": {name: high for name, (_, high) in ranges.items()}, "flags": []})


def test_an_sft_checkpoint_answers_the_test_split_and_the_judges_score_it(
    ml_storage: Path, make_user: Callable[..., User]
) -> None:
    # given two recorded, adjudicated training items and one test item
    actor, admin = make_user(None, "actor-x"), make_user(None, "admin-x")
    for index in range(2):
        TrainingItemFactory.create(
            external_id=f"TR-{index}", recording__actor=actor, pitch_hz=150.0 + 40 * index, **SHORT_GOLD
        )
    test_item = TrainingItemFactory.create(
        external_id="TE-0", recording__actor=actor, split="test", **SHORT_GOLD
    )

    # when SFT + AAA runs on the train split from the tiny demo model
    sft = finished(
        start_ml_job(
            SFT_JOB,
            started_by=admin,
            parameters=tiny_sft_parameters(max_steps=60, learning_rate=3e-3, lora=None),
            splits=["train"],
        )
    )

    # then it succeeded with a recorded checkpoint whose files and metadata name the snapshot
    assert sft.status == JobStatus.SUCCEEDED, sft.error
    checkpoint = Checkpoint.objects.get(produced_by=sft)
    snapshot = DatasetSnapshot.objects.get(job=sft)
    assert sft.result is not None and checkpoint.parent is not None
    assert sft.result["checkpoint"] == checkpoint.pk
    assert (checkpoint.kind, checkpoint.dataset_snapshot, checkpoint.parent.name) == (
        Checkpoint.Kind.SFT,
        snapshot,
        "tiny-demo-qwen2-audio",
    )
    assert sorted(snapshot.entries[index]["external_id"] for index in range(2)) == ["TR-0", "TR-1"]
    metadata = json.loads((Path(checkpoint.uri) / "metadata.json").read_text())
    assert metadata["dataset_snapshot_ids"] == [str(snapshot.pk)]
    assert metadata["config"]["lambda_aaa"] == 0.1
    assert all((Path(checkpoint.uri) / name).is_file() for name in metadata["weight_sha256"])
    assert [point["step"] for point in sft.metrics] == list(range(1, 61))
    assert {"loss", "ce", "aaa", "rho"} <= set(sft.metrics[-1])
    assert sft.metrics[-1]["loss"] < sft.metrics[0]["loss"]

    # when inference answers the test split with that checkpoint
    inference = finished(
        start_ml_job(
            INFERENCE_JOB,
            started_by=admin,
            parameters={
                "start_from": f"checkpoint:{checkpoint.pk}",
                "system_name": "EchoChat test",
                "benchmark_version": "echoeval-v1",
                "max_new_tokens": 140,
                "batch_size": 1,
                "device": "cpu",
                "dtype": "float32",
            },
            splits=["test"],
        )
    )

    # then the system holds one output per test item, split into the EchoChat spans
    assert inference.status == JobStatus.SUCCEEDED, inference.error
    output = ModelOutput.objects.get(system__name="EchoChat test", item=test_item)
    assert output.system.version == checkpoint.name
    parsed = parse_output(output.raw_text)
    assert output.structured
    assert output.perception_text == parsed.span_text("perception") != ""
    assert output.response_text == parsed.span_text("response")
    assert output.parse_problems == parsed.problems

    # and the response was voiced by the configured TTS (eSpeak NG here), so the system has audio
    # for listening studies and the response-audio judge
    assert not output.system.text_only
    assert inference.result is not None and inference.result["voiced_by"] == "eSpeak NG"
    samples, rate = read_wav(read_media(output.response_audio_key))
    assert rate > 0 and len(samples) > 0

    # and a judge run scores it on every text stage
    with running_chat_server(full_marks) as server:
        judge = JudgeConfig.objects.create(name="local", base_url=server.base_url, model="judge")
        run = start_judge_run(output.system, "echoeval-v1", judge, started_by=admin)
        assert run.job is not None
        assert finished(run.job).status == JobStatus.SUCCEEDED
    scores = dict(Judgement.objects.filter(output=output).values_list("stage", "score"))
    assert set(scores) == {"perception", "reasoning", "response_content"}
    assert all(score is not None and score > 0 for score in scores.values())
