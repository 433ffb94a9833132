"""The reward-scoring job: a reward model scores a system's outputs, beside the judges' scores.

Each output's response is heard through its own audio when it has readable audio, else spoken
in the speech style its strategy span declares. This module loads torch; only gpu workers
import it (through ``ml.jobs.tasks``).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotation.audio.upload import AudioRejected, UploadLimits, normalise_upload
from annotation.gold.models import GoldReference
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, ModelOutput, System
from ml.core.reward.checkpoint import load_reward_model
from ml.core.reward.model import RewardInput
from ml.core.reward.scoring import score_responses
from ml.core.runtime import resolve_device
from ml.core.training_records import read_wav
from ml.jobs.models import Checkpoint, OutputRewardScore
from ml.jobs.voicing import configured_synthesizer
from webapp.jobs import JobReporter, JobResult
from webapp.lib.output_format import parse_strategy_fields
from webapp.lib.row_outcome import RESULT_KEY, RowTally
from webapp.lib.stored_text import unescape, without_refused
from webapp.models import Job
from webapp.storage import read_media

# Response audio of any length and loudness is scored as it is; only unreadable files fall back.
_RESPONSE_AUDIO_LIMITS = UploadLimits(
    min_seconds=0.0, max_seconds=600.0, silence_peak_dbfs=-200.0, max_clipping_ratio=1.0
)
REWARD_SCORING_BATCH = 16


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
    style = parse_strategy_fields(unescape(output.strategy_text)).speech_style or "calm"
    spoken = without_refused(unescape(output.response_text))
    samples, rate = configured_synthesizer()(spoken or " ", style)
    return samples, rate, OutputRewardScore.Audio.SYNTHESIZED


def run_reward_scoring_job(job: Job, reporter: JobReporter) -> JobResult:
    """Score a system's outputs with a reward model; the scores sit beside the judges' in evaluation."""
    parameters = job.parameters
    checkpoint = Checkpoint.objects.get(pk=parameters["reward_checkpoint"], kind=Checkpoint.Kind.REWARD)
    system = System.objects.get(pk=parameters["system"])
    version = parameters.get("benchmark_version") or DEFAULT_BENCHMARK_VERSION
    outputs = list(
        ModelOutput.objects.for_version(version)
        .filter(system=system)
        .select_related("item__recording")
        .order_by("item__external_id")
    )
    golds = dict(
        GoldReference.objects.current()
        .filter(item__in=[output.item_id for output in outputs])
        .values_list("item_id", "perception")
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
    row_errors: list[str] = []
    for start in range(0, len(scorable), REWARD_SCORING_BATCH):
        inputs: list[RewardInput] = []
        sources: list[str] = []
        batch: list[ModelOutput] = []
        for output in scorable[start : start + REWARD_SCORING_BATCH]:
            assert output.item.recording is not None
            try:
                user_audio, user_rate = read_wav(read_media(output.item.recording.audio_key))
                response_audio, response_rate, source = _response_audio(output)
            except Exception as exc:  # one output's audio, whatever went wrong: the others are scored
                row_errors.append(f"{output.item.external_id}: {type(exc).__name__}: {exc}"[:500])
                reporter.log(row_errors[-1])
                continue
            emotion = (golds.get(output.item_id) or {}).get("emotion") or output.item.target_emotion
            inputs.append(
                RewardInput(
                    user_audio=user_audio,
                    emotion=str(emotion),
                    response_text=unescape(output.response_text),
                    response_audio=response_audio,
                    user_sample_rate=user_rate,
                    response_sample_rate=response_rate,
                )
            )
            sources.append(source)
            batch.append(output)
        scores = score_responses(model, inputs) if inputs else []
        # A batch lands whole or not at all, so a job redelivered after a worker died mid-batch
        # re-scores it through update_or_create on unique (output, checkpoint): no half batch, no duplicate.
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
        if not scored:
            continue
        reporter.metric(
            len(scored),
            content_mean=sum(c for c, _ in scored) / len(scored),
            alignment_mean=sum(a for _, a in scored) / len(scored),
        )
        done = len(scored) + len(row_errors)
        reporter.progress(done / max(1, len(scorable)), f"Scored {len(scored)} of {len(scorable)}")
    return {
        RESULT_KEY: RowTally(len(scorable), len(row_errors), noun="outputs").as_result(),
        "row_errors": row_errors[:100],
        "scored": len(scored),
        "skipped": skipped,
        "content_mean": sum(c for c, _ in scored) / len(scored) if scored else None,
        "alignment_mean": sum(a for _, a in scored) / len(scored) if scored else None,
        "checkpoint": checkpoint.pk,
        "system": system.pk,
    }
