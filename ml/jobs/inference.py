"""The EchoChat inference job: a checkpoint answers every item of a snapshot; the answers become a
System's outputs, which the judges and listening studies then use. Each response is voiced by the
configured TTS backend (``ml.jobs.voicing``) in the speech style its strategy span declares, so the
system has response audio for MOS studies and the response-audio judge.

With ``dialogue_history`` set ("gold" or "own", ``ml.core.config.HISTORY_MODES``) the job answers
the snapshot's dialogue turns instead, dialogue by dialogue and turn by turn, each turn hearing the
earlier turns' user audio and the gold replies or the model's own; the outputs replace the
system's dialogue-turn outputs only, and a single-item run replaces the single items' only.

This module loads torch; only gpu workers import it (through ``ml.jobs.tasks``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, System
from ml.core.config import HISTORY_MODES, INFERENCE_BATCH_SIZE, INFERENCE_MAX_NEW_TOKENS
from ml.core.inference import InferenceOutput, run_dialogue_inference, run_inference
from ml.core.loop import ProgressCallback
from ml.core.runtime import StartModel, load_start_model, resolve_device_and_dtype
from ml.core.training_inputs import dialogue_inference_items, inference_items
from ml.jobs.checkpoint_registry import resolve_start
from ml.jobs.datasets import snapshot_records
from ml.jobs.models import Checkpoint
from ml.jobs.training.register import finite_metrics, job_snapshot, stop_if_cancelled
from ml.jobs.voicing import configured_synthesizer, configured_tts, describe_tts, voice_responses
from webapp.jobs import JobReporter, JobResult
from webapp.lib.row_outcome import RESULT_KEY, RowTally
from webapp.models import Job


def produced_history(history_mode: str, output: InferenceOutput) -> dict[str, Any]:
    """Return the history a dialogue turn's output was produced with, as `ModelOutput.history`."""
    replies = [{"turn": turn, "reply": reply} for turn, reply in enumerate(output.history_replies, start=1)]
    return {"source": history_mode, "replies": replies}


def refuse_foreign_system(system_name: str) -> None:
    """Raise ValueError when the name is another (not EchoChat) system's: its outputs are not ours to replace."""
    existing = System.objects.filter(name=system_name).first()
    if existing is not None and existing.category != System.Category.OURS:
        raise ValueError(f"system {system_name!r} is not an EchoChat system; choose another name")


@dataclass(frozen=True)
class AnsweringModel:
    start: StartModel
    uri: str
    checkpoint: Checkpoint | None
    device: str
    dtype: str

    def version(self) -> str:
        """Return what the system's version records: the checkpoint's name, else the model's URI."""
        return self.checkpoint.name if self.checkpoint is not None else self.uri


def load_answering_model(parameters: dict[str, Any], reporter: JobReporter) -> AnsweringModel:
    """Load the job's ``start_from`` model on its device (job parameters as ``ml.jobs.launch`` documents)."""
    device, dtype = resolve_device_and_dtype(
        parameters.get("device") or "auto", parameters.get("dtype") or "auto"
    )
    uri, checkpoint = resolve_start(parameters["start_from"])
    reporter.progress(0.02, f"Loading {uri}", force=True)
    return AnsweringModel(load_start_model(uri, device, dtype), uri, checkpoint, device, dtype)


def inference_progress(reporter: JobReporter) -> ProgressCallback:
    """Return inference's progress callback: answered counts as metrics, progress from 5% to 90%."""

    def on_progress(fraction: float, message: str, metrics: dict[str, float]) -> None:
        reporter.metric(
            int(metrics.get("done", 0)), **finite_metrics({k: v for k, v in metrics.items() if k != "done"})
        )
        reporter.progress(0.05 + 0.85 * fraction, message)

    return on_progress


def echochat_system(system_name: str, model: AnsweringModel) -> System:
    """Return the EchoChat system of that name (made when new), spoken, its version the model's."""
    system, _ = System.objects.get_or_create(
        name=system_name, defaults={"category": System.Category.OURS, "text_only": False}
    )
    system.version = model.version()
    system.text_only = False
    system.save(update_fields=["version", "text_only"])
    return system


def run_inference_job(job: Job, reporter: JobReporter) -> JobResult:
    """Answer every item of the snapshot with a checkpoint and store the answers as a System's outputs."""
    parameters = job.parameters
    snapshot = job_snapshot(job)
    system_name = str(parameters["system_name"])
    version = parameters.get("benchmark_version") or DEFAULT_BENCHMARK_VERSION
    refuse_foreign_system(system_name)
    history_mode = str(parameters.get("dialogue_history") or "")
    if history_mode and history_mode not in HISTORY_MODES:
        raise ValueError(f"unknown dialogue history mode {history_mode!r}")
    reporter.progress(0.0, "Reading the dataset snapshot", force=True)
    rows = snapshot_records(snapshot)
    dialogues = dialogue_inference_items(rows) if history_mode else []
    items = (
        [item for dialogue in dialogues for item in dialogue]
        if history_mode
        else inference_items([row for row in rows if not row.record.dialogue_id])
    )
    if not items:
        wanted = "dialogue turn" if history_mode else "single item (dialogue turns need a dialogue run)"
        raise ValueError(f"snapshot #{snapshot.pk} holds no {wanted} to answer")
    model = load_answering_model(parameters, reporter)
    shape = (
        f"{len(items)} turns of {len(dialogues)} dialogues ({history_mode} history)"
        if history_mode
        else f"{len(items)} items"
    )
    reporter.log(
        f"Inference with {model.uri} on {shape} of snapshot #{snapshot.pk}, {model.device}/{model.dtype}"
    )

    on_progress = inference_progress(reporter)
    max_new_tokens = int(parameters.get("max_new_tokens") or INFERENCE_MAX_NEW_TOKENS)
    batch_size = int(parameters.get("batch_size") or INFERENCE_BATCH_SIZE)
    if history_mode:
        outputs = run_dialogue_inference(
            model.start.speech_lm,
            dialogues,
            history_mode,
            max_new_tokens,
            on_progress,
            reporter.should_cancel,
            batch_size,
        )
    else:
        outputs = run_inference(
            model.start.speech_lm, items, max_new_tokens, on_progress, reporter.should_cancel, batch_size
        )
    # A cancelled run returns fewer outputs: importing them would remove the missing items' outputs.
    stop_if_cancelled(len(outputs) < len(items), reporter)
    tts = configured_tts()
    reporter.log(f"Voicing the responses with {describe_tts(tts)}")
    voiced = voice_responses(
        [(output.item_id, output.parsed) for output in outputs],
        configured_synthesizer(),
        lambda done: reporter.progress(0.9 + 0.05 * done / max(1, len(outputs)), f"Voiced {done} responses"),
    )
    reporter.progress(0.95, "Storing the outputs", force=True)
    system = echochat_system(system_name, model)
    lines = "\n".join(
        json.dumps(
            {
                "item_id": output.item_id,
                "output": output.raw_text,
                "audio": f"{output.item_id}.wav",
                # The history this turn was answered with: its judge reads exactly these replies.
                **({"history": produced_history(history_mode, output)} if history_mode else {}),
            }
        )
        for output in outputs
    )
    # Per row, never per job: an output that cannot be voiced or stored is that row's error (with
    # its reason, in the log and the result), and every other output is stored.
    report = import_outputs(
        system,
        version,
        lines.encode(),
        voiced,
        skip_invalid_rows=True,
        scope="dialogue" if history_mode else "single",
    )
    row_errors = [f"{name}: {reason}" for name, reason in sorted(voiced.failures.items())]
    # A row that was not voiced is also missing its audio for the import: said once, with the cause.
    row_errors += [str(problem) for problem in report.errors if problem.item_id not in voiced.failures]
    for line in [*row_errors, *(str(warning) for warning in report.warnings)]:
        reporter.log(line)
    stored = report.created + report.updated + report.unchanged if report.imported else 0
    tally = RowTally(len(outputs), len(outputs) - stored, noun="outputs")
    well_formed = sum(output.parsed.well_formed for output in outputs)
    reporter.log(
        f"{stored} of {len(outputs)} outputs stored for {system.name} ({version}): {report.created} new, "
        f"{report.updated} changed, {report.unchanged} unchanged, {report.removed} removed; "
        f"{well_formed} well formed; response audio by {describe_tts(tts)}"
    )
    return {
        RESULT_KEY: tally.as_result(),
        "row_errors": row_errors[:100],
        "escaped": [
            str(warning) for warning in report.warnings if warning.message.startswith("text escaped")
        ][:100],
        "system": system.pk,
        "system_name": system.name,
        "benchmark_version": version,
        "outputs": len(outputs),
        "well_formed": well_formed,
        "voiced_by": describe_tts(tts),
        "checkpoint": model.checkpoint.pk if model.checkpoint is not None else None,
        "dialogue_history": history_mode,
        "dialogues": len(dialogues),
    }
