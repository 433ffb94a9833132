"""Reward-model training and reward scoring as gpu-queue jobs, on a tiny reward model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.test import Client
from django.urls import reverse

from evaluation.outputs.models import ModelOutput, System
from ml.jobs.launch import REWARD_SCORING_JOB, REWARD_TRAINING_JOB, start_ml_job
from ml.jobs.models import Checkpoint, DatasetSnapshot, OutputRewardScore
from tests.ml.jobs.samples import voiced_wav
from tests.ml.jobs.support import TrainingItemFactory, finished, ladder_writer
from tests.support.fake_chat_server import running_chat_server
from webapp.lib.output_format import render_output, render_strategy
from webapp.models import JobStatus, User
from webapp.roles import Role
from webapp.storage import new_media_key, save_media

# A random Qwen2.5-Omni thinker of the real class, as the demo trains.
TINY_REWARD_MODEL = {"backbone": "tiny", "tiny_hidden_size": 32, "tiny_layers": 1}


def test_a_trained_reward_model_scores_a_systems_outputs(
    db: None, ml_storage: Path, make_user: Callable[..., User], settings: Any, client: Client
) -> None:
    # given two adjudicated items with reference responses, and one without gold
    actor = make_user(None, "actor-w")
    first = TrainingItemFactory.create(external_id="TR-0", recording__actor=actor)
    TrainingItemFactory.create(external_id="TR-1", recording__actor=actor, pitch_hz=220.0)
    TrainingItemFactory.create(external_id="TR-2", recording__actor=actor, with_gold=False)

    # when the reward model trains for three steps, its ladder written by the configured LLM
    with running_chat_server(ladder_writer) as writer:
        settings.DRAFT_LLM_BASE_URL, settings.DRAFT_LLM_MODEL = writer.base_url, "ladder-llm"
        training = finished(
            start_ml_job(
                REWARD_TRAINING_JOB,
                started_by=None,
                parameters={
                    "checkpoint_name": "reward-small",
                    "config": {"max_steps": 3, "batch_size": 6, "device": "cpu"},
                    "model_config": TINY_REWARD_MODEL,
                },
                splits=["train"],
            )
        )

    # then its checkpoint is recorded with the appendix D.1 data it was trained on
    assert training.status == JobStatus.SUCCEEDED, training.error
    checkpoint = Checkpoint.objects.get(produced_by=training)
    assert (checkpoint.name, checkpoint.kind, checkpoint.arch) == (
        "reward-small",
        Checkpoint.Kind.REWARD,
        "echochat_reward_model",
    )
    snapshot = DatasetSnapshot.objects.get(job=training)
    assert snapshot.excluded == {"no current gold reference": 1}
    metadata = json.loads((Path(checkpoint.uri) / "metadata.json").read_text())
    # 6 rungs spoken in the fitting style plus 3 in a clashing one, per item
    assert metadata["extra"]["examples"] == 2 * 9
    # rungs 0-4 were asked of the LLM once per item, with the gold reference as grade 5
    assert len(writer.chat_requests) == 2
    assert "That sounds lonely. I am here." in json.dumps(writer.chat_requests[0].json)
    assert (metadata["extra"]["ladder_writer"], metadata["extra"]["tts"]) == ("ladder-llm", "eSpeak NG")
    # the fine-tuned thinker is saved whole beside the heads
    backbone = json.loads((Path(checkpoint.uri) / "backbone" / "config.json").read_text())
    assert backbone["model_type"] == "qwen2_5_omni_thinker"
    assert "backbone/model.safetensors" in metadata["weight_sha256"]
    # and its page tells an admin what it was built on and where its data came from
    client.force_login(make_user(Role.ADMIN, "admin-w"))
    page = client.get(reverse("ml:job", args=[training.pk])).content.decode()
    assert "backbone tiny (Qwen2.5-Omni thinker), every weight trained" in page
    assert "graded ladder written by the LLM for 2 items (ladder-llm)" in page
    assert "Responses voiced by eSpeak NG" in page
    assert [point["step"] for point in training.metrics] == [1, 2, 3]

    # given a system with one output that has its own audio and one that has none
    system = System.objects.create(name="Omni-Y")
    spoken = ModelOutput.objects.create(
        system=system,
        item=first,
        response_text="I am here for you.",
        response_audio_key=save_media(new_media_key("model_output", "wav"), voiced_wav()),
    )
    text_only = ModelOutput.objects.create(
        system=system,
        item=TrainingItemFactory.create(external_id="TE-0", recording__actor=actor, split="test"),
        raw_text=render_output(
            "Sad.", "Context: alone.", render_strategy(["Reassurance"], "excited"), "Cheer up!"
        ),
        strategy_text=render_strategy(["Reassurance"], "excited"),
        response_text="Cheer up!",
    )

    # when the reward model scores the system's outputs
    scoring = finished(
        start_ml_job(
            REWARD_SCORING_JOB,
            started_by=None,
            parameters={
                "reward_checkpoint": checkpoint.pk,
                "system": system.pk,
                "benchmark_version": "echoeval-v1",
            },
        )
    )

    # then each output has one score in range, heard from its own audio or synthesised in its declared style
    assert scoring.status == JobStatus.SUCCEEDED, scoring.error
    assert scoring.result is not None
    assert (scoring.result["scored"], scoring.result["skipped"]) == (2, 0)
    scores = {score.output_id: score for score in OutputRewardScore.objects.filter(checkpoint=checkpoint)}
    assert scores[spoken.pk].audio == OutputRewardScore.Audio.OWN
    assert scores[text_only.pk].audio == OutputRewardScore.Audio.SYNTHESIZED
    assert all(0 <= score.content <= 5 and 0 <= score.alignment <= 1 for score in scores.values())
    assert scoring.metrics[-1]["step"] == 2
