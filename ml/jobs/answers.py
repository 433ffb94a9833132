"""A system's inference answers stored as its outputs: the one way, for every answering path.

The in-process model (``ml.jobs.inference``) and an OpenAI-compatible serving endpoint
(``ml.jobs.endpoint_inference``) both end here: each response is voiced by the configured TTS
(``ml.jobs.voicing``) in the speech style its strategy span declares, and the outputs are imported
(``evaluation.outputs.importing.import_outputs``) row by row, a dialogue turn with the history it
was answered with (``ModelOutput.history``). Torch-free: a non-GPU worker runs the endpoint path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import System
from ml.core.answers import InferenceOutput
from ml.core.reward.features import StyleSynthesizer
from ml.jobs.voicing import voice_responses
from webapp.jobs import JobReporter
from webapp.lib.row_outcome import RESULT_KEY, RowTally


def produced_history(history_mode: str, output: InferenceOutput) -> dict[str, Any]:
    """Return the history a dialogue turn's output was produced with, as `ModelOutput.history`."""
    replies = [{"turn": turn, "reply": reply} for turn, reply in enumerate(output.history_replies, start=1)]
    return {"source": history_mode, "replies": replies}


def spoken_system(name: str, category: str, version: str) -> System:
    """Return the system of that name (made when new, of `category`), spoken, at `version`: what
    every inference job (a checkpoint in the worker, or an endpoint) answers as."""
    system, _ = System.objects.get_or_create(name=name, defaults={"category": category, "text_only": False})
    system.version = version[:200]
    system.text_only = False
    system.save(update_fields=["version", "text_only"])
    return system


def refuse_foreign_system(system_name: str, category: str = System.Category.OURS) -> None:
    """Raise ValueError when the name is a system of another category: its outputs are not ours to
    replace (an EchoChat run never overwrites a baseline's imported outputs, nor the reverse)."""
    existing = System.objects.filter(name=system_name).first()
    if existing is not None and existing.category != category:
        raise ValueError(
            f"system {system_name!r} is not a {System.Category(category).label} system; choose another name"
        )


def store_answers(
    reporter: JobReporter,
    system: System,
    version: str,
    outputs: Sequence[InferenceOutput],
    history_mode: str,
    synthesizer: StyleSynthesizer,
    voiced_by: str,
) -> dict[str, Any]:
    """Voice and store the outputs as the system's (progress 90% to 95%); return the job's result
    fields: the row tally, row errors, escaped texts, counts."""
    reporter.log(f"Voicing the responses with {voiced_by}")
    voiced = voice_responses(
        [(output.item_id, output.parsed) for output in outputs],
        synthesizer,
        lambda done: reporter.progress(0.9 + 0.05 * done / max(1, len(outputs)), f"Voiced {done} responses"),
    )
    reporter.progress(0.95, "Storing the outputs", force=True)
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
        f"{well_formed} well formed; response audio by {voiced_by}"
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
        "voiced_by": voiced_by,
        "dialogue_history": history_mode,
    }
