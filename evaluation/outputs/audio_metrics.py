"""Objective response-audio metrics: measured per output by a job, summed per system for the pages.

The measures are `annotation.audio.speech.objective`'s (DNSMOS P.808 and P.835 OVRL, loudness,
speaking rate). They load speech models, so they run in the measure_response_audio job only
(`evaluation.tasks`), which measures every output of a benchmark version whose audio has no
current row, one row at a time: a job that dies is started again and carries on where it stopped.
Pages read the stored rows (`system_means`) and describe each measure with `METRICS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count, F, Q, QuerySet

from evaluation.outputs.models import ModelOutput, OutputAudioMetrics
from webapp.jobs import JobReporter
from webapp.lib.row_outcome import RESULT_KEY, RowTally
from webapp.storage import read_media

JOB_KIND = "measure_response_audio"


@dataclass(frozen=True)
class Metric:
    key: str  # the OutputAudioMetrics field
    label: str
    scale: str  # what its numbers mean, shown with every table of them


METRICS: tuple[Metric, ...] = (
    Metric(
        "p808_mos",
        "DNSMOS P.808",
        "estimated overall quality as P.808 listeners rate it, 1-5, higher is better",
    ),
    Metric(
        "ovrl_mos",
        "DNSMOS P.835 OVRL",
        "estimated overall quality of speech and background, 1-5, higher is better",
    ),
    Metric(
        "loudness_lufs",
        "Loudness (LUFS)",
        "integrated loudness, ITU-R BS.1770; a level, not a quality: about -23 to -16 is usual for speech",
    ),
    Metric(
        "phones_per_second",
        "Speaking rate (phones/s)",
        "phones per second over speech, pauses excluded; about 10-15 is conversational, neither end is better",
    ),
)


def current_metrics() -> QuerySet[OutputAudioMetrics]:
    """Return the rows that measured the audio their output has now (not a replaced file)."""
    return OutputAudioMetrics.objects.filter(audio_key=F("output__response_audio_key"))


def outputs_to_measure(benchmark_version: str) -> QuerySet[ModelOutput]:
    """Return the version's outputs with response audio but no current measurement, by id."""
    measured = current_metrics().filter(output__benchmark_version=benchmark_version).values("output_id")
    return (
        ModelOutput.objects.for_version(benchmark_version)
        .exclude(response_audio_key="")
        .exclude(pk__in=measured)
        .order_by("pk")
    )


def measure_output(output: ModelOutput) -> OutputAudioMetrics:
    """Measure one output's response audio and store the row (a file that cannot be read gets a
    row saying why, so the job does not try it again until the audio changes)."""
    from annotation.audio.clean import clean_audio
    from annotation.audio.speech.objective import objective_metrics
    from annotation.audio.tts import TtsError, decode_wav
    from annotation.audio.upload import AudioRejected

    figures: dict[str, Any] = {metric.key: None for metric in METRICS} | {"true_peak_dbtp": None}
    problem = ""
    try:
        speech = decode_wav(
            clean_audio(read_media(output.response_audio_key), "the response audio").wav_bytes
        )
        figures |= objective_metrics(speech.samples / 32768.0, speech.sample_rate, output.response_text)
    except AudioRejected as rejected:
        problem = rejected.reason[:300]
    except (TtsError, OSError) as exc:
        problem = str(exc)[:300]
    row, _ = OutputAudioMetrics.objects.update_or_create(
        output=output, defaults={"audio_key": output.response_audio_key, "problem": problem, **figures}
    )
    return row


def measure_version(benchmark_version: str, reporter: JobReporter) -> dict[str, Any]:
    """The job's work: measure every output of the version that has no current measurement."""
    pending = list(outputs_to_measure(benchmark_version).values_list("pk", flat=True))
    problems = 0
    for done, pk in enumerate(pending, start=1):
        reporter.check_cancelled()
        output = ModelOutput.objects.filter(pk=pk).exclude(response_audio_key="").first()
        if output is not None:  # deleted or stripped of its audio since the job started
            problems += bool(measure_output(output).problem)
        reporter.progress(done / len(pending), f"Measured {done} of {len(pending)} response audio files")
    return {
        "benchmark_version": benchmark_version,
        "measured": len(pending),
        "problems": problems,
        # An audio file that could not be measured is that output's failure (its `problem` says why).
        RESULT_KEY: RowTally(len(pending), problems, noun="audio files").as_result(),
    }


@dataclass(frozen=True)
class SystemAudioFigures:
    with_audio: int  # outputs with response audio
    measured: int  # of those, measured with their current audio
    means: dict[str, float | None]  # metric key -> mean over the outputs it could be measured on


def system_means(
    benchmark_version: str, items: Q, system_ids: Sequence[int]
) -> dict[int, SystemAudioFigures]:
    """Return each system's objective figures on the version's outputs whose item matches `items`
    (a filter on ``item``, e.g. the leaderboard's item set)."""
    outputs = ModelOutput.objects.for_version(benchmark_version).filter(items, system_id__in=system_ids)
    with_audio = dict(
        outputs.exclude(response_audio_key="")
        .order_by()
        .values_list("system_id")
        .annotate(n=Count("pk"))
        .values_list("system_id", "n")
    )
    rows = (
        current_metrics()
        .filter(output__in=outputs)
        .order_by()
        .values("output__system_id")
        .annotate(measured=Count("pk"), **{metric.key: Avg(metric.key) for metric in METRICS})
    )
    by_system = {row["output__system_id"]: row for row in rows}
    return {
        system_id: SystemAudioFigures(
            with_audio=with_audio.get(system_id, 0),
            measured=int(by_system.get(system_id, {}).get("measured", 0)),
            means={metric.key: by_system.get(system_id, {}).get(metric.key) for metric in METRICS},
        )
        for system_id in system_ids
    }
