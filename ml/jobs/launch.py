"""Starting EchoChat jobs on the gpu queue: the job kinds, their parameters, and the dataset snapshot.

Parameters each kind reads from ``Job.parameters`` (plain JSON; the training configs are the
``to_dict`` shapes of ``SftConfig``, ``RlConfig`` and ``RewardTrainingConfig`` /
``RewardModelConfig`` of ``ml.core.config``, with device and dtype "auto"
decided by the worker that runs the job):

- ``sft_aaa``: start_from, checkpoint_name, config;
- ``rl_sdca``: start_from, checkpoint_name, config, reward_checkpoint (id or null), judge_config
  (id or null: heuristic stage scores);
- ``reward_training``: checkpoint_name, config, model_config;
- ``reward_scoring``: reward_checkpoint, system, benchmark_version;
- ``echochat_inference``: start_from, system_name, benchmark_version, max_new_tokens, batch_size,
  device, dtype, dialogue_history ("" single items; "gold" or "own": dialogues turn by turn);
- ``endpoint_inference``: endpoint_url, model, key_variable (an ECHOSTUDIO_JUDGE_KEY_* variable
  or ""), system_name, system_category (of ``System.Category``), benchmark_version,
  dialogue_history, max_concurrency, max_tokens, temperature, system_prompt. It runs on the
  default queue (no torch: ``ml.jobs.endpoint_inference``);
- ``echomind_inference``: start_from, system_name, prompts (reply prompt strengths, of
  ``Reply.Prompt``), max_new_tokens, batch_size, device, dtype. It reads the EchoMind delivery sets'
  accepted takes as they are when it runs: no snapshot.

``start_from`` is "tiny" (the demo's random model), "checkpoint:<id>", or a base model path or
``s3://`` URI. Every kind but reward scoring and EchoMind inference also gets splits and dataset_snapshot, set here;
a training job started on a finished build's export (``ml.jobs.builds.sources``) gets build
(its id) and no splits.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ml.builder.models import Build
from ml.jobs.builds.sources import BuildNotReady, create_build_snapshot
from ml.jobs.datasets import EmptyDataset, create_snapshot
from ml.jobs.models import DatasetSnapshot
from webapp.jobs import start_job
from webapp.models import Job, User

SFT_JOB = "sft_aaa"
RL_JOB = "rl_sdca"
REWARD_TRAINING_JOB = "reward_training"
REWARD_SCORING_JOB = "reward_scoring"
INFERENCE_JOB = "echochat_inference"
ENDPOINT_INFERENCE_JOB = "endpoint_inference"
ECHOMIND_INFERENCE_JOB = "echomind_inference"
ML_JOB_KINDS: tuple[str, ...] = (
    SFT_JOB,
    RL_JOB,
    REWARD_TRAINING_JOB,
    REWARD_SCORING_JOB,
    INFERENCE_JOB,
    ENDPOINT_INFERENCE_JOB,
    ECHOMIND_INFERENCE_JOB,
)
JOB_TITLES: dict[str, str] = {
    SFT_JOB: "SFT with Acoustic-Anchored Attention",
    RL_JOB: "RL with Step-Decomposed Credit Assignment",
    REWARD_TRAINING_JOB: "Reward-model training",
    REWARD_SCORING_JOB: "Reward scoring of a system's outputs",
    INFERENCE_JOB: "EchoChat inference on a benchmark split",
    ENDPOINT_INFERENCE_JOB: "Inference at a serving endpoint (vLLM, hosted audio model)",
    ECHOMIND_INFERENCE_JOB: "EchoChat answers the EchoMind delivery sets",
}
SNAPSHOT_PURPOSES: dict[str, str] = {
    SFT_JOB: DatasetSnapshot.Purpose.SFT,
    RL_JOB: DatasetSnapshot.Purpose.RL,
    REWARD_TRAINING_JOB: DatasetSnapshot.Purpose.REWARD,
    INFERENCE_JOB: DatasetSnapshot.Purpose.INFERENCE,
    ENDPOINT_INFERENCE_JOB: DatasetSnapshot.Purpose.INFERENCE,
}


class LaunchRefused(Exception):
    """The job cannot start (e.g. no item is ready); the message says why, for the admin."""


def start_ml_job(
    kind: str,
    *,
    started_by: User | None,
    parameters: dict[str, Any],
    splits: list[str] | None = None,
    build: Build | None = None,
) -> Job:
    """Snapshot the data the job will use (the splits' completed annotations, or `build`'s export)
    and enqueue it; raise LaunchRefused when there is none.

    One transaction: a snapshot never exists without its job, and the job reaches the queue only
    once both are committed.
    """
    if kind not in ML_JOB_KINDS:
        raise ValueError(f"not an EchoChat job kind: {kind}")
    purpose = SNAPSHOT_PURPOSES.get(kind)
    with transaction.atomic():
        # Race: a worker can pick the job up the moment it is queued; start_job enqueues on commit,
        # so the worker never sees a job whose snapshot (or the snapshot's link to it) is not yet
        # written, and a refused launch leaves neither behind.
        snapshot = None
        if purpose is not None and build is not None:
            try:
                snapshot = create_build_snapshot(purpose, build)
            except BuildNotReady as exc:
                raise LaunchRefused(str(exc)) from exc
            export = snapshot.build_export
            assert export is not None, "a build snapshot names the export version it froze"
            parameters = {
                **parameters,
                "splits": [],
                "build": build.pk,
                "build_export_version": export.version,
                "dataset_snapshot": snapshot.pk,
            }
        elif purpose is not None:
            if not splits:
                raise LaunchRefused("Choose at least one split.")
            try:
                snapshot = create_snapshot(purpose, splits)
            except EmptyDataset as exc:
                raise LaunchRefused(str(exc)) from exc
            parameters = {**parameters, "splits": list(splits), "dataset_snapshot": snapshot.pk}
        job = start_job(kind, started_by=started_by, parameters=parameters)
        if snapshot is not None:
            snapshot.job = job
            snapshot.save(update_fields=["job"])
    return job
