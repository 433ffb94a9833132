"""The EchoChat inference job: a checkpoint answers every item of a snapshot; the answers become a
System's outputs, which the judges and listening studies then use. Each response is voiced by the
configured TTS backend (``ml.jobs.voicing``) in the speech style its strategy span declares, so the
system has response audio for MOS studies and the response-audio judge (``ml.jobs.answers``, the
storing the endpoint path ``ml.jobs.endpoint_inference`` shares).

With ``dialogue_history`` set ("gold" or "own", ``ml.core.config.HISTORY_MODES``) the job answers
the snapshot's dialogue turns instead, dialogue by dialogue and turn by turn, each turn hearing the
earlier turns' user audio and the gold replies or the model's own; the outputs replace the
system's dialogue-turn outputs only, and a single-item run replaces the single items' only.

This module loads torch; only gpu workers import it (through ``ml.jobs.tasks``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, System
from ml.core.config import HISTORY_MODES, INFERENCE_BATCH_SIZE, INFERENCE_MAX_NEW_TOKENS
from ml.core.inference import run_dialogue_inference, run_inference
from ml.core.loop import ProgressCallback
from ml.core.runtime import StartModel, load_start_model, resolve_device_and_dtype
from ml.core.training_inputs import dialogue_inference_items, inference_items
from ml.jobs.answers import refuse_foreign_system, spoken_system, store_answers
from ml.jobs.checkpoint_registry import resolve_start
from ml.jobs.datasets import snapshot_records
from ml.jobs.models import Checkpoint
from ml.jobs.training.register import finite_metrics, job_snapshot, stop_if_cancelled
from ml.jobs.voicing import configured_synthesizer, configured_tts, describe_tts
from webapp.jobs import JobReporter, JobResult
from webapp.models import Job


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
    return spoken_system(system_name, System.Category.OURS, model.version())


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
    system = echochat_system(system_name, model)
    stored = store_answers(
        reporter, system, version, outputs, history_mode, configured_synthesizer(), describe_tts(tts)
    )
    return {
        **stored,
        "checkpoint": model.checkpoint.pk if model.checkpoint is not None else None,
        "dialogues": len(dialogues),
    }
