"""The RL and reward-model jobs train on a finished build's exported records, as SFT does."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from ml.jobs.launch import REWARD_TRAINING_JOB, RL_JOB, start_ml_job
from ml.jobs.models import Checkpoint, DatasetSnapshot
from tests.ml.jobs.builds.support import exported_build
from tests.ml.jobs.support import finished, ladder_writer, tiny_rl_parameters
from tests.support.fake_chat_server import running_chat_server
from webapp.models import JobStatus, User

pytestmark = pytest.mark.slow


def test_the_rl_job_runs_sdca_steps_on_a_build_export(ml_storage: Path, tmp_path: Path, make_user) -> None:
    # given a finished build of two voiced samples exported as training records
    build = exported_build(tmp_path / "export", single=2)
    admin: User = make_user(None, "admin-rl")

    # when one RL step runs on it from the tiny base model
    job = finished(
        start_ml_job(
            RL_JOB,
            started_by=admin,
            parameters=tiny_rl_parameters(),
            build=build,
        )
    )

    # then it rolled out on the build's records and recorded finite metrics and a checkpoint
    assert job.status == JobStatus.SUCCEEDED, job.error
    snapshot = DatasetSnapshot.objects.get(job=job)
    assert snapshot.build == build
    (point,) = job.metrics
    assert {"loss", "kl", "reward_total"} <= set(point)
    assert all(math.isfinite(value) for value in point.values())
    checkpoint = Checkpoint.objects.get(produced_by=job)
    assert (checkpoint.kind, checkpoint.dataset_snapshot) == (Checkpoint.Kind.RL, snapshot)


def test_the_reward_model_trains_on_a_build_export(
    ml_storage: Path, tmp_path: Path, make_user, settings: Any
) -> None:
    # given a finished build of two voiced samples exported as training records
    build = exported_build(tmp_path / "export", single=2)

    # when a tiny reward model trains on it, its ladder written by the configured LLM
    with running_chat_server(ladder_writer) as writer:
        settings.DRAFT_LLM_BASE_URL, settings.DRAFT_LLM_MODEL = writer.base_url, "ladder-llm"
        job = finished(
            start_ml_job(
                REWARD_TRAINING_JOB,
                started_by=make_user(None, "admin-rw"),
                parameters={
                    "checkpoint_name": "reward-on-build",
                    "config": {"max_steps": 2, "batch_size": 6, "device": "cpu"},
                    "model_config": {"backbone": "tiny", "tiny_hidden_size": 32, "tiny_layers": 1},
                },
                build=build,
            )
        )

    # then the ladder was asked once per build record, each with the build's reply as its top rung
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert len(writer.chat_requests) == 2
    assert all("That sounds really hard." in json.dumps(request.json) for request in writer.chat_requests)
    snapshot = DatasetSnapshot.objects.get(job=job)
    assert snapshot.build == build
    checkpoint = Checkpoint.objects.get(produced_by=job)
    assert (checkpoint.kind, checkpoint.dataset_snapshot) == (Checkpoint.Kind.REWARD, snapshot)
    metadata = json.loads((Path(checkpoint.uri) / "metadata.json").read_text())
    assert metadata["extra"]["examples"] == 2 * 9
