"""The gpu-queue jobs: EchoChat inference, reward scoring, reward-model training, SFT + AAA, RL + SDCA.

Each job reads its parameters (see ``ml.jobs.launch``), loads its dataset snapshot, reports progress
and per-step metrics (loss, rho, rewards, advantages) to the job row, and polls for a cancel
before every step. A training job then saves, verifies and records its checkpoint
(``ml.jobs.checkpoint_registry``) and only then returns: a cancelled or failed run leaves no
checkpoint, and a succeeded job always names one. The last cancel check is just before saving;
nothing after it can turn a recorded checkpoint into a cancelled job.

A job re-run after its worker died (``webapp.jobs`` re-queues it once) first looks for the
checkpoint the earlier attempt may have recorded, and returns that instead of training again.

This module loads torch; only gpu workers import it (through ``ml.jobs.tasks``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from django.db import transaction

from annotation.audio.upload import AudioRejected, UploadLimits, normalise_upload
from annotation.gold.models import GoldReference
from evaluation.judging.models import JudgeConfig
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import ModelOutput, System
from ml.core.inference import run_inference
from ml.core.judge_scoring import JudgeStageScorer
from ml.core.reward_model import (
    RewardInput,
    RewardModelConfig,
    RewardTrainingConfig,
    build_reward_model,
    build_reward_training_examples,
    evaluate_reward_model,
    load_reward_model,
    save_reward_model,
    score_responses,
    train_reward_model,
)
from ml.core.rl import RlConfig, train_rl
from ml.core.runtime import load_start_model, resolve_device, resolve_dtype, save_trained_model
from ml.core.sft import SftConfig, train_sft
from ml.core.training_inputs import (
    inference_items,
    judge_golds,
    reward_sources,
    rollout_scorer,
    sft_examples,
    speak_in_style,
)
from ml.core.training_records import read_wav
from ml.jobs.checkpoint_registry import default_checkpoint_name, resolve_start, store_checkpoint
from ml.jobs.datasets import snapshot_records
from ml.jobs.models import Checkpoint, DatasetSnapshot, OutputRewardScore
from webapp.jobs import JobCancelled, JobReporter, JobResult
from webapp.lib.llm_client import InMemoryJudgeCache, JudgeClient
from webapp.lib.output_format import parse_strategy_fields
from webapp.models import Job
from webapp.storage import read_media

ProgressCallback = Callable[[float, str, dict[str, float]], None]
# Charts stay readable and the job row small: at most about this many points per run.
MAX_METRIC_POINTS = 500
# Response audio of any length and loudness is scored as it is; only unreadable files fall back.
_RESPONSE_AUDIO_LIMITS = UploadLimits(
    min_seconds=0.0, max_seconds=600.0, silence_peak_dbfs=-200.0, max_clipping_ratio=1.0
)
REWARD_SCORING_BATCH = 16


def finite_metrics(values: Mapping[str, float]) -> dict[str, float]:
    """Return the metrics that are finite numbers (JSON, and PostgreSQL's jsonb, have no NaN)."""
    return {
        name: float(value)
        for name, value in values.items()
        if isinstance(value, int | float) and math.isfinite(value)
    }


def training_progress(reporter: JobReporter, start: float, end: float) -> ProgressCallback:
    """Return a training loop's progress callback: progress in [start, end] and thinned metrics."""

    def on_progress(fraction: float, message: str, metrics: dict[str, float]) -> None:
        step = int(metrics.get("step", 0))
        total = max(1, round(step / fraction)) if fraction > 0 else 1
        every = max(1, total // MAX_METRIC_POINTS)
        if step % every == 0 or step >= total:
            reporter.metric(step, **finite_metrics({k: v for k, v in metrics.items() if k != "step"}))
        # progress() raises JobCancelled when an admin asked to stop: the run ends without a checkpoint.
        reporter.progress(start + (end - start) * fraction, message)

    return on_progress


def _recorded_checkpoint(job: Job) -> Checkpoint | None:
    return Checkpoint.objects.filter(produced_by=job).first()


def _checkpoint_result(checkpoint: Checkpoint, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {
        "checkpoint": checkpoint.pk,
        "checkpoint_name": checkpoint.name,
        "uri": checkpoint.uri,
        **(extra or {}),
    }


def _snapshot(job: Job) -> DatasetSnapshot:
    return DatasetSnapshot.objects.get(pk=int(job.parameters["dataset_snapshot"]))


def _stop_if_cancelled(cancelled: bool, reporter: JobReporter) -> None:
    if cancelled or reporter.should_cancel():
        raise JobCancelled()


def _devices(requested_device: str, requested_dtype: str) -> tuple[str, str]:
    device = resolve_device(requested_device)
    return device, resolve_dtype(requested_dtype, device)


# --- SFT with AAA ------------------------------------------------------------------------


def run_sft_job(job: Job, reporter: JobReporter) -> JobResult:
    """Fine-tune from the chosen model on the snapshot's targets with L_CE + lambda * L_AAA."""
    if (done := _recorded_checkpoint(job)) is not None:
        return _checkpoint_result(done, {"resumed": True})
    parameters = job.parameters
    snapshot = _snapshot(job)
    reporter.progress(0.0, "Reading the dataset snapshot", force=True)
    examples = sft_examples(snapshot_records(snapshot))
    requested = SftConfig.from_dict(parameters["config"])
    device, dtype = _devices(requested.device, requested.dtype)
    config = replace(requested, device=device, dtype=dtype)
    reporter.log(
        f"SFT on {len(examples)} examples of snapshot #{snapshot.pk} ({snapshot.content_hash[:12]}), "
        f"lambda_AAA={config.lambda_aaa}, {device}/{dtype}"
    )
    uri, parent = resolve_start(parameters["start_from"])
    reporter.progress(0.02, f"Loading {uri}", force=True)
    start = load_start_model(uri, device, dtype)
    result = train_sft(
        start.speech_lm,
        examples,
        config,
        on_progress=training_progress(reporter, 0.05, 0.9),
        should_cancel=reporter.should_cancel,
    )
    _stop_if_cancelled(result.cancelled, reporter)
    metrics = {"steps": result.steps_completed, **finite_metrics(result.last_metrics())}
    reporter.progress(0.92, "Saving the checkpoint", force=True)
    checkpoint = store_checkpoint(
        job,
        Checkpoint.Kind.SFT,
        parameters.get("checkpoint_name") or default_checkpoint_name(job, Checkpoint.Kind.SFT),
        lambda destination: save_trained_model(
            start, destination, config.to_dict(), [str(snapshot.pk)], metrics, extra={"job": job.pk}
        ),
        snapshot=snapshot,
        parent=parent,
    )
    reporter.log(f"Checkpoint {checkpoint.name} saved and verified at {checkpoint.uri}")
    return _checkpoint_result(checkpoint, {"metrics": metrics})


# --- RL with SDCA ------------------------------------------------------------------------


def run_rl_job(job: Job, reporter: JobReporter) -> JobResult:
    """GRPO with SDCA (or vanilla GRPO) advantages from the judge's stage scores and the reward model."""
    if (done := _recorded_checkpoint(job)) is not None:
        return _checkpoint_result(done, {"resumed": True})
    parameters = job.parameters
    snapshot = _snapshot(job)
    reporter.progress(0.0, "Reading the dataset snapshot", force=True)
    rows = snapshot_records(snapshot)
    requested = RlConfig.from_dict(parameters["config"])
    device, dtype = _devices(requested.device, requested.dtype)
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
            "No judge endpoint configured: stage scores s1-s3 come from the heuristic scorer of ml.core.rl "
            "(word overlap with the gold reference), not from the rubric judge"
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
        f"RL ({config.mode}) on {len(rows)} prompts of snapshot #{snapshot.pk}, G={config.group_size}, "
        f"KL={config.kl_coef}, lr={config.learning_rate}, {device}/{dtype}"
    )
    reporter.progress(0.02, f"Loading {uri}", force=True)
    start = load_start_model(uri, device, dtype, for_rl=True)
    try:
        result = train_rl(
            start.speech_lm,
            None,
            inference_items(rows),
            rollout_scorer(rows, judge, reward),
            config,
            on_progress=training_progress(reporter, 0.05, 0.9),
            should_cancel=reporter.should_cancel,
        )
    finally:
        if client is not None:
            client.close()
    if judge is not None:
        reporter.log(
            f"Judge: {judge.counts.prompts} prompts, {judge.counts.judge_errors} unusable answers (scored 0), "
            f"{judge.counts.skipped_empty} empty spans not sent"
        )
    _stop_if_cancelled(result.cancelled, reporter)
    metrics = {"steps": result.steps_completed, **finite_metrics(result.last_metrics())}
    reporter.progress(0.92, "Saving the checkpoint", force=True)
    checkpoint = store_checkpoint(
        job,
        Checkpoint.Kind.RL,
        parameters.get("checkpoint_name") or default_checkpoint_name(job, Checkpoint.Kind.RL),
        lambda destination: save_trained_model(
            start,
            destination,
            config.to_dict(),
            [str(snapshot.pk)],
            metrics,
            extra={
                "job": job.pk,
                "judge": judge_config.name if judge is not None and judge_config is not None else None,
                "reward_model": reward_checkpoint.uri if reward_checkpoint is not None else None,
            },
        ),
        snapshot=snapshot,
        parent=parent,
    )
    reporter.log(f"Checkpoint {checkpoint.name} saved and verified at {checkpoint.uri}")
    return _checkpoint_result(checkpoint, {"metrics": metrics})


# --- reward model --------------------------------------------------------------------------


def run_reward_training_job(job: Job, reporter: JobReporter) -> JobResult:
    """Train the reward model on appendix D.1's graded and style-mismatched responses."""
    if (done := _recorded_checkpoint(job)) is not None:
        return _checkpoint_result(done, {"resumed": True})
    parameters = job.parameters
    snapshot = _snapshot(job)
    reporter.progress(0.0, "Reading the dataset snapshot", force=True)
    sources = reward_sources(snapshot_records(snapshot))
    reporter.progress(0.02, f"Speaking the graded responses of {len(sources)} items", force=True)
    examples = build_reward_training_examples(sources, speak_in_style)
    requested = RewardTrainingConfig.from_dict(parameters["config"])
    config = replace(requested, device=resolve_device(requested.device))
    model_config = RewardModelConfig.from_dict(parameters.get("model_config") or {})
    reporter.log(
        f"Reward model on {len(examples)} examples from {len(sources)} items of snapshot #{snapshot.pk} "
        f"({snapshot.content_hash[:12]}), {config.device}"
    )
    model = build_reward_model(model_config, seed=config.seed)
    result = train_reward_model(
        model,
        examples,
        config,
        on_progress=training_progress(reporter, 0.1, 0.85),
        should_cancel=reporter.should_cancel,
    )
    _stop_if_cancelled(result.cancelled, reporter)
    # Measured on the training examples: a fit check, not a held-out score.
    fit = {f"train_{name}": value for name, value in evaluate_reward_model(model, examples).items()}
    metrics = {
        "steps": result.steps_completed,
        **finite_metrics(result.last_metrics()),
        **finite_metrics(fit),
    }
    reporter.log("Fit on the training examples: " + json.dumps(finite_metrics(fit)))
    reporter.progress(0.92, "Saving the reward model", force=True)
    checkpoint = store_checkpoint(
        job,
        Checkpoint.Kind.REWARD,
        parameters.get("checkpoint_name") or default_checkpoint_name(job, Checkpoint.Kind.REWARD),
        lambda destination: save_reward_model(
            model,
            destination,
            training_config=config.to_dict(),
            dataset_snapshot_ids=[str(snapshot.pk)],
            metrics=metrics,
            extra={"job": job.pk, "examples": len(examples)},
        ),
        snapshot=snapshot,
        parent=None,
    )
    reporter.log(f"Reward model {checkpoint.name} saved and verified at {checkpoint.uri}")
    return _checkpoint_result(checkpoint, {"metrics": metrics})


def _response_audio(output: ModelOutput) -> tuple[Any, int, str]:
    """Return (samples, rate, source) of an output's response: its own audio, or synthesised."""
    if output.response_audio_key:
        try:
            audio = normalise_upload(
                read_media(output.response_audio_key),
                output.response_audio_key,
                limits=_RESPONSE_AUDIO_LIMITS,
            )
        except AudioRejected:
            pass
        else:
            return audio.samples, audio.sample_rate, OutputRewardScore.Audio.OWN
    style = parse_strategy_fields(output.strategy_text).speech_style or "calm"
    samples, rate = speak_in_style(output.response_text or " ", style)
    return samples, rate, OutputRewardScore.Audio.SYNTHESIZED


def run_reward_scoring_job(job: Job, reporter: JobReporter) -> JobResult:
    """Score a system's outputs with a reward model; the scores sit beside the judges' in evaluation."""
    parameters = job.parameters
    checkpoint = Checkpoint.objects.get(pk=parameters["reward_checkpoint"], kind=Checkpoint.Kind.REWARD)
    system = System.objects.get(pk=parameters["system"])
    version = parameters.get("benchmark_version") or "echoeval-v1"
    outputs = list(
        ModelOutput.objects.filter(system=system, benchmark_version=version)
        .select_related("item__recording")
        .order_by("item__external_id")
    )
    golds = dict(
        GoldReference.objects.filter(
            item__in=[output.item_id for output in outputs], is_current=True
        ).values_list("item_id", "perception")
    )
    scorable = [output for output in outputs if output.item.recording is not None]
    skipped = len(outputs) - len(scorable)
    reporter.log(
        f"Scoring {len(scorable)} outputs of {system.name} ({version}) with {checkpoint.name}; "
        f"{skipped} skipped (no accepted recording)"
    )
    reporter.progress(0.0, f"Loading {checkpoint.name}", force=True)
    model = load_reward_model(checkpoint.uri, device=resolve_device("auto")).model
    scored: list[tuple[float, float]] = []
    for start in range(0, len(scorable), REWARD_SCORING_BATCH):
        batch = scorable[start : start + REWARD_SCORING_BATCH]
        inputs: list[RewardInput] = []
        sources: list[str] = []
        for output in batch:
            assert output.item.recording is not None
            user_audio, user_rate = read_wav(read_media(output.item.recording.audio_key))
            response_audio, response_rate, source = _response_audio(output)
            emotion = (golds.get(output.item_id) or {}).get("emotion") or output.item.target_emotion
            inputs.append(
                RewardInput(
                    user_audio=user_audio,
                    emotion=str(emotion),
                    response_text=output.response_text,
                    response_audio=response_audio,
                    user_sample_rate=user_rate,
                    response_sample_rate=response_rate,
                )
            )
            sources.append(source)
        scores = score_responses(model, inputs)
        with transaction.atomic():
            for output, score, source in zip(batch, scores, sources, strict=True):
                OutputRewardScore.objects.update_or_create(
                    output=output,
                    checkpoint=checkpoint,
                    defaults={
                        "content": score.content,
                        "alignment": score.alignment,
                        "audio": source,
                        "job": job,
                    },
                )
        scored.extend((score.content, score.alignment) for score in scores)
        reporter.metric(
            len(scored),
            content_mean=sum(c for c, _ in scored) / len(scored),
            alignment_mean=sum(a for _, a in scored) / len(scored),
        )
        reporter.progress(len(scored) / max(1, len(scorable)), f"Scored {len(scored)} of {len(scorable)}")
    return {
        "scored": len(scored),
        "skipped": skipped,
        "content_mean": sum(c for c, _ in scored) / len(scored) if scored else None,
        "alignment_mean": sum(a for _, a in scored) / len(scored) if scored else None,
        "checkpoint": checkpoint.pk,
        "system": system.pk,
    }


# --- inference -----------------------------------------------------------------------------


def run_inference_job(job: Job, reporter: JobReporter) -> JobResult:
    """Answer every item of the snapshot with a checkpoint and store the answers as a System's outputs."""
    parameters = job.parameters
    snapshot = _snapshot(job)
    system_name = str(parameters["system_name"])
    version = parameters.get("benchmark_version") or "echoeval-v1"
    existing = System.objects.filter(name=system_name).first()
    if existing is not None and (existing.category != System.Category.OURS or not existing.text_only):
        # EchoChat inference writes text only; another system's outputs (or audio) are not ours to replace.
        raise ValueError(f"system {system_name!r} is not a text-only EchoChat system; choose another name")
    reporter.progress(0.0, "Reading the dataset snapshot", force=True)
    items = inference_items(snapshot_records(snapshot))
    device, dtype = _devices(parameters.get("device") or "auto", parameters.get("dtype") or "auto")
    uri, checkpoint = resolve_start(parameters["start_from"])
    reporter.progress(0.02, f"Loading {uri}", force=True)
    start = load_start_model(uri, device, dtype)
    reporter.log(f"Inference with {uri} on {len(items)} items of snapshot #{snapshot.pk}, {device}/{dtype}")

    def on_progress(fraction: float, message: str, metrics: dict[str, float]) -> None:
        reporter.metric(
            int(metrics.get("done", 0)), **finite_metrics({k: v for k, v in metrics.items() if k != "done"})
        )
        reporter.progress(0.05 + 0.85 * fraction, message)

    outputs = run_inference(
        start.speech_lm,
        items,
        max_new_tokens=int(parameters.get("max_new_tokens") or 1024),
        on_progress=on_progress,
        should_cancel=reporter.should_cancel,
        batch_size=int(parameters.get("batch_size") or 1),
    )
    # A cancelled run returns fewer outputs: importing them would remove the missing items' outputs.
    _stop_if_cancelled(len(outputs) < len(items), reporter)
    reporter.progress(0.95, "Storing the outputs", force=True)
    system, _ = System.objects.get_or_create(
        name=system_name, defaults={"category": System.Category.OURS, "text_only": True}
    )
    system.version = checkpoint.name if checkpoint is not None else uri
    system.save(update_fields=["version"])
    rows = "\n".join(json.dumps({"item_id": output.item_id, "output": output.raw_text}) for output in outputs)
    report = import_outputs(system, version, rows.encode(), None)
    if not report.imported:
        raise RuntimeError(
            "; ".join(str(problem) for problem in report.errors) or "the outputs were not stored"
        )
    well_formed = sum(output.parsed.well_formed for output in outputs)
    reporter.log(
        f"{len(outputs)} outputs stored for {system.name} ({version}): {report.created} new, "
        f"{report.updated} changed, {report.unchanged} unchanged, {report.removed} removed; "
        f"{well_formed} well formed"
    )
    return {
        "system": system.pk,
        "system_name": system.name,
        "benchmark_version": version,
        "outputs": len(outputs),
        "well_formed": well_formed,
        "checkpoint": checkpoint.pk if checkpoint is not None else None,
    }
