"""The three gpu-queue training jobs: SFT + AAA, RL + SDCA, and reward-model training.

Each job reads its parameters (see ``ml.jobs.launch``) and prepares a ``TrainingPlan`` from its
dataset snapshot; ``ml.jobs.training.register.train_and_register`` then trains, saves, verifies
and records the checkpoint the same way for all three, and resumes from a recorded checkpoint
when the job is re-run after its worker died.

This module loads torch; only gpu workers import it (through ``ml.jobs.tasks``).
"""

from __future__ import annotations

import json
from dataclasses import replace

from annotation.labelling.drafts import draft_config
from evaluation.judging.models import JudgeConfig
from ml.core.ablations import with_ablation
from ml.core.config import RewardModelConfig, RewardTrainingConfig, RlConfig, SftConfig
from ml.core.judge_scoring import JudgeStageScorer
from ml.core.loop import CancelCheck, ProgressCallback, TrainingResult
from ml.core.reward.checkpoint import load_reward_model, save_reward_model
from ml.core.reward.ladder import build_reward_training_examples
from ml.core.reward.ladder_writer import describe, write_graded_ladders
from ml.core.reward.model import build_reward_model
from ml.core.reward.training import evaluate_reward_model, train_reward_model
from ml.core.runtime import (
    load_start_model,
    resolve_device,
    resolve_device_and_dtype,
    resolve_dtype,
    save_trained_model,
)
from ml.core.sft import train_sft
from ml.core.training_inputs import (
    judge_golds,
    reward_sources,
    sft_examples,
    train_rl_on_records,
)
from ml.jobs.checkpoint_registry import resolve_start
from ml.jobs.datasets import snapshot_records
from ml.jobs.models import Checkpoint, DatasetSnapshot
from ml.jobs.training.register import TrainingPlan, finite_metrics, train_and_register, training_resume
from ml.jobs.voicing import configured_synthesizer, configured_tts, describe_tts
from webapp.jobs import JobReporter, JobResult
from webapp.lib.llm_client import InMemoryJudgeCache, JudgeClient
from webapp.models import Job


def run_sft_job(job: Job, reporter: JobReporter) -> JobResult:
    """Fine-tune from the chosen model on the snapshot's targets with L_CE + lambda * L_AAA."""
    return train_and_register(job, reporter, plan_sft).as_job_result()


def run_rl_job(job: Job, reporter: JobReporter) -> JobResult:
    """GRPO with SDCA (or vanilla GRPO) advantages from the judge's stage scores and the reward model."""
    return train_and_register(job, reporter, plan_rl).as_job_result()


def run_reward_training_job(job: Job, reporter: JobReporter) -> JobResult:
    """Train the reward model on appendix D.1's graded and style-mismatched responses."""
    return train_and_register(job, reporter, plan_reward_training).as_job_result()


def plan_sft(job: Job, reporter: JobReporter, snapshot: DatasetSnapshot) -> TrainingPlan:
    """Return the SFT run: the snapshot's examples and the start model, LoRA or full weights."""
    parameters = job.parameters
    examples = sft_examples(snapshot_records(snapshot))
    requested = SftConfig.from_dict(parameters["config"])
    requested = with_ablation(requested, requested.ablation)
    device, dtype = resolve_device_and_dtype(requested.device, requested.dtype)
    config = replace(requested, device=device, dtype=dtype)
    reporter.log(
        f"SFT on {len(examples)} examples of snapshot #{snapshot.pk} ({snapshot.content_hash[:12]}), "
        f"lambda_AAA={config.lambda_aaa}, ablation {config.ablation}, {device}/{dtype}"
    )
    uri, parent = resolve_start(parameters["start_from"])
    reporter.progress(0.02, f"Loading {uri}", force=True)
    start = load_start_model(uri, device, dtype)

    def train(on_progress: ProgressCallback, should_cancel: CancelCheck) -> TrainingResult:
        return train_sft(
            start.speech_lm,
            examples,
            config,
            on_progress,
            should_cancel,
            aaa_target=start.aaa_target,
            resume=training_resume(job),
        )

    return TrainingPlan(
        kind=Checkpoint.Kind.SFT,
        train=train,
        save=lambda destination, metrics: save_trained_model(
            start, destination, config.to_dict(), [str(snapshot.pk)], metrics, extra={"job": job.pk}
        ),
        parent=parent,
    )


def plan_rl(job: Job, reporter: JobReporter, snapshot: DatasetSnapshot) -> TrainingPlan:
    """Return the RL run: the policy, and rollouts scored by the chosen judge and reward model
    (the heuristic scorer stands in for whichever is not chosen)."""
    parameters = job.parameters
    rows = snapshot_records(snapshot)
    requested = RlConfig.from_dict(parameters["config"])
    requested = with_ablation(requested, requested.ablation)
    device, dtype = resolve_device_and_dtype(requested.device, requested.dtype)
    config = replace(requested, device=device, dtype=dtype)

    judge = None
    client = None
    judge_config = JudgeConfig.objects.filter(pk=parameters.get("judge_config") or 0).first()
    if judge_config is not None and judge_config.effective_base_url:
        client = JudgeClient(judge_config.client_config(), cache=InMemoryJudgeCache())
        judge = JudgeStageScorer(client, judge_golds(rows))
        reporter.log(
            f"Stage scores s1-s3 from judge {judge_config.name} at {judge_config.effective_base_url}"
        )
    else:
        reporter.log(
            "No judge endpoint configured: stage scores s1-s3 come from the heuristic scorer of "
            "ml.core.rl.heuristic (word overlap with the gold reference), not from the rubric judge"
        )
    reward = None
    reward_checkpoint = Checkpoint.objects.filter(
        pk=parameters.get("reward_checkpoint") or 0, kind=Checkpoint.Kind.REWARD
    ).first()
    if reward_checkpoint is not None:
        reward = load_reward_model(reward_checkpoint.uri, device=device).model
        reporter.log(f"Response reward from reward model {reward_checkpoint.name}")
    else:
        reporter.log("No reward model chosen: the response reward comes from the heuristic scorer")

    uri, parent = resolve_start(parameters["start_from"])
    reporter.log(
        f"RL ({config.mode}, ablation {config.ablation}, tau={config.sdca.tau}) on {len(rows)} prompts "
        f"of snapshot #{snapshot.pk}, G={config.group_size}, "
        f"KL={config.kl_coef}, lr={config.learning_rate}, {device}/{dtype}"
    )
    reporter.progress(0.02, f"Loading {uri}", force=True)
    start = load_start_model(uri, device, dtype, for_rl=True)

    def train(on_progress: ProgressCallback, should_cancel: CancelCheck) -> TrainingResult:
        try:
            result = train_rl_on_records(
                start.speech_lm,
                rows,
                config,
                judge,
                reward,
                on_progress,
                should_cancel,
                synthesize=configured_synthesizer(),
                resume=training_resume(job),
            )
        finally:
            if client is not None:
                client.close()
        if judge is not None:
            reporter.log(
                f"Judge: {judge.counts.prompts} prompts, {judge.counts.judge_errors} unusable answers "
                f"({judge.counts.failed_rollouts} rollouts left out of their groups' advantages), "
                f"{judge.counts.skipped_empty} empty spans not sent"
            )
        return result

    extra = {
        "job": job.pk,
        "judge": judge_config.name if judge is not None and judge_config is not None else None,
        "reward_model": reward_checkpoint.uri if reward_checkpoint is not None else None,
    }
    return TrainingPlan(
        kind=Checkpoint.Kind.RL,
        train=train,
        save=lambda destination, metrics: save_trained_model(
            start, destination, config.to_dict(), [str(snapshot.pk)], metrics, extra=extra
        ),
        parent=parent,
    )


def plan_reward_training(job: Job, reporter: JobReporter, snapshot: DatasetSnapshot) -> TrainingPlan:
    """Return the reward-model run: the graded ladder spoken in fitting and clashing styles."""
    parameters = job.parameters
    sources = reward_sources(snapshot_records(snapshot))
    writer = draft_config()
    if writer is not None:
        reporter.progress(0.01, f"Asking {writer.base_url} for the graded ladder of {len(sources)} items")
        with JudgeClient(writer) as client:
            sources, counts = write_graded_ladders(client, sources)
        reporter.log(f"{describe(counts)} ({writer.model})")
    else:
        reporter.log(
            "No LLM endpoint configured (ECHOSTUDIO_DRAFT_LLM_BASE_URL): rungs 0-4 of the graded "
            "ladder come from templates around the reference response"
        )
    tts = configured_tts()
    reporter.progress(0.02, f"Speaking the graded responses of {len(sources)} items", force=True)
    reporter.log(f"Responses voiced by {describe_tts(tts)}, in the fitting and a clashing style")
    examples = build_reward_training_examples(sources, configured_synthesizer())
    requested = RewardTrainingConfig.from_dict(parameters["config"])
    device = resolve_device(requested.device)
    config = replace(requested, device=device, dtype=resolve_dtype(requested.dtype, device))
    model_config = RewardModelConfig.from_dict(parameters.get("model_config") or {})
    reporter.log(
        f"Reward model on {len(examples)} examples from {len(sources)} items of snapshot #{snapshot.pk} "
        f"({snapshot.content_hash[:12]}), {config.device}/{config.dtype}; backbone {model_config.backbone} "
        "(Qwen2.5-Omni thinker), every weight trained"
    )
    model = build_reward_model(model_config, seed=config.seed)

    def train(on_progress: ProgressCallback, should_cancel: CancelCheck) -> TrainingResult:
        return train_reward_model(model, examples, config, on_progress, should_cancel, training_resume(job))

    def measure_fit() -> dict[str, float]:
        # Measured on the training examples: a fit check, not a held-out score.
        fit = {f"train_{name}": value for name, value in evaluate_reward_model(model, examples).items()}
        reporter.log("Fit on the training examples: " + json.dumps(finite_metrics(fit)))
        return fit

    return TrainingPlan(
        kind=Checkpoint.Kind.REWARD,
        train=train,
        save=lambda destination, metrics: save_reward_model(
            model,
            destination,
            training_config=config.to_dict(),
            dataset_snapshot_ids=[str(snapshot.pk)],
            metrics=metrics,
            extra={
                "job": job.pk,
                "examples": len(examples),
                "model_config": model_config.to_dict(),
                "ladder_writer": writer.model if writer is not None else "templates",
                "tts": describe_tts(tts),
            },
        ),
        progress_span=(0.1, 0.85),
        measure=measure_fit,
        noun="reward model",
    )
