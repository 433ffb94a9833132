"""One RL + SDCA step as a gpu-queue job on the tiny model: finite metrics and an adapter checkpoint."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from ml.jobs.launch import RL_JOB, start_ml_job
from ml.jobs.models import Checkpoint
from tests.ml.jobs.support import TrainingItemFactory, finished, tiny_rl_parameters
from webapp.models import JobStatus, User


def test_an_rl_step_records_finite_metrics_and_an_adapter_checkpoint(
    db: None, ml_storage: Path, make_user: Callable[..., User]
) -> None:
    # given one adjudicated item, no judge and no reward model
    TrainingItemFactory.create(external_id="TR-0", recording__actor=make_user(None, "actor-l"))

    # when one RL step runs from the tiny base model
    job = finished(
        start_ml_job(
            RL_JOB,
            started_by=None,
            parameters=tiny_rl_parameters(ablation="no_gating"),
            splits=["train"],
        )
    )

    # then the step's loss, KL, rewards and per-span advantages are finite numbers
    assert job.status == JobStatus.SUCCEEDED, job.error
    (point,) = job.metrics
    expected = {
        "loss",
        "kl",
        "reward_total",
        "reward_format",
        *(f"advantage_abs_{span}" for span in ("perception", "reasoning", "strategy", "response")),
    }
    assert expected <= set(point)
    assert all(math.isfinite(value) for value in point.values())
    # and the log says where the scores came from
    assert "heuristic scorer of ml.core.rl" in job.log
    # and the checkpoint is a LoRA adapter over the tiny base, trained from it
    checkpoint = Checkpoint.objects.get(produced_by=job)
    assert checkpoint.parent is not None
    assert (checkpoint.kind, checkpoint.parent.name) == (Checkpoint.Kind.RL, "tiny-demo-qwen2-audio")
    assert checkpoint.base_model == checkpoint.parent.uri
    metadata = json.loads((Path(checkpoint.uri) / "metadata.json").read_text())
    assert metadata["config"]["mode"] == "sdca"
    # and the paper variant it ran is recorded with the setting it changed
    assert (metadata["config"]["ablation"], metadata["config"]["sdca"]["tau"]) == ("no_gating", 0.0)
    assert "ablation no_gating, tau=0.0" in job.log
    assert metadata["lora"]["rank"] == 4
