"""Objective response-audio metrics: measured per output by a job, summed per system for the pages.

The measures are `annotation.audio.speech.objective`'s (DNSMOS P.808 and P.835 OVRL, loudness,
speaking rate, the reply's WER against its text, speaker similarity to the system's reference
voice). They load speech models, so they run in the measure_response_audio job only
(`evaluation.tasks`), which measures every output of a benchmark version whose audio has no
current row, one row at a time: a job that dies is started again and carries on where it stopped.
Pages read the stored rows (`system_means`) and describe each measure with `METRICS`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Q, QuerySet

from evaluation.outputs.models import ModelOutput, OutputAudioMetrics
from webapp.jobs import JobReporter
from webapp.lib.row_outcome import RESULT_KEY, RowTally
from webapp.lib.stats import mean_t_interval
from webapp.storage import read_media

JOB_KIND = "measure_response_audio"


@dataclass(frozen=True)
class Metric:
    key: str  # the OutputAudioMetrics field
    label: str
    scale: str  # what its numbers mean, shown with every table of them
    # The values the measure can take: an interval is clipped to them, so a WER near 0 never shows
    # a negative lower bound (the t interval assumes an unbounded measure).
    lowest: float | None = None
    highest: float | None = None


METRICS: tuple[Metric, ...] = (
    Metric(
        "p808_mos",
        "DNSMOS P.808",
        "estimated overall quality as P.808 listeners rate it, 1-5, higher is better",
        lowest=1.0,
        highest=5.0,
    ),
    Metric(
        "ovrl_mos",
        "DNSMOS P.835 OVRL",
        "estimated overall quality of speech and background, 1-5, higher is better",
        lowest=1.0,
        highest=5.0,
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
        lowest=0.0,
        highest=None,
    ),
    Metric(
        "reply_wer",
        "Reply WER",
        "word error rate of free ASR (pocketsphinx) of the audio against the reply text, lower is better; "
        "compare systems, not a pass mark (eSpeak NG saying its own text: 0.27 on average, another text: 1.1)",
        lowest=0.0,
        highest=None,
    ),
    Metric(
        "speaker_similarity",
        "Speaker similarity",
        "cosine similarity (Resemblyzer) to the system's reference voice, higher is closer; "
        "the same eSpeak NG voice about 0.89, a female variant 0.66, close male voices 0.85",
        lowest=-1.0,
        highest=1.0,
    ),
)


@dataclass(frozen=True)
class MetricSummary:
    """One system's mean of one metric with its 95% t interval over the outputs it was measured on."""

    n: int
    mean: float | None
    low: float | None
    high: float | None


def current_metrics() -> QuerySet[OutputAudioMetrics]:
    """Return the rows that measured the audio their output has now (not a replaced file), against
    its system's reference voice now (a new reference voice: measured again)."""
    return OutputAudioMetrics.objects.filter(
        audio_key=F("output__response_audio_key"),
        reference_voice_key=F("output__system__reference_voice_key"),
    )


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
    from annotation.audio.speech.objective import objective_metrics, reply_measures
    from annotation.audio.tts import TtsError, decode_wav
    from annotation.audio.upload import AudioRejected

    figures: dict[str, Any] = {metric.key: None for metric in METRICS} | {"true_peak_dbtp": None}
    problem = ""
    reference_key = output.system.reference_voice_key
    try:
        speech = decode_wav(
            clean_audio(read_media(output.response_audio_key), "the response audio").wav_bytes
        )
        samples = speech.samples / 32768.0
        figures |= objective_metrics(samples, speech.sample_rate, output.response_text)
        reference = None
        if reference_key:
            voice = decode_wav(clean_audio(read_media(reference_key), "the reference voice").wav_bytes)
            reference = (voice.samples / 32768.0, voice.sample_rate)
        figures |= reply_measures(samples, speech.sample_rate, output.response_text, reference)
    except AudioRejected as rejected:
        problem = rejected.reason[:300]
    except (TtsError, OSError) as exc:
        problem = str(exc)[:300]
    row, _ = OutputAudioMetrics.objects.update_or_create(
        output=output,
        defaults={
            "audio_key": output.response_audio_key,
            "reference_voice_key": reference_key,
            "problem": problem,
            **figures,
        },
    )
    return row


def measure_version(benchmark_version: str, reporter: JobReporter) -> dict[str, Any]:
    """The job's work: measure every output of the version that has no current measurement."""
    pending = list(outputs_to_measure(benchmark_version).values_list("pk", flat=True))
    problems = 0
    for done, pk in enumerate(pending, start=1):
        reporter.check_cancelled()
        output = (
            ModelOutput.objects.filter(pk=pk).exclude(response_audio_key="").select_related("system").first()
        )
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
    summaries: dict[str, MetricSummary]  # metric key -> mean, interval and n

    @property
    def means(self) -> dict[str, float | None]:
        """Return each metric's mean over the outputs it could be measured on."""
        return {key: summary.mean for key, summary in self.summaries.items()}


def summarise(values: Sequence[float], metric: Metric | None = None) -> MetricSummary:
    """Return the mean of one metric's values with its t interval (`webapp.lib.stats`, the one rule),
    clipped to the values the metric can take."""
    if not values:
        return MetricSummary(0, None, None, None)
    mean, low, high = mean_t_interval(values)
    if metric is not None and low is not None and high is not None:
        low = low if metric.lowest is None else max(low, metric.lowest)
        high = high if metric.highest is None else min(high, metric.highest)
    return MetricSummary(len(values), mean, low, high)


def system_means(
    benchmark_version: str, items: Q, system_ids: Sequence[int]
) -> dict[int, SystemAudioFigures]:
    """Return each system's objective figures on the version's outputs whose item matches `items`
    (a filter on ``item``, e.g. the leaderboard's item set): per metric its mean, 95% t interval
    and n, the outputs it could be measured on."""
    outputs = ModelOutput.objects.for_version(benchmark_version).filter(items, system_id__in=system_ids)
    with_audio = dict(
        outputs.exclude(response_audio_key="")
        .order_by()
        .values_list("system_id")
        .annotate(n=Count("pk"))
        .values_list("system_id", "n")
    )
    keys = [metric.key for metric in METRICS]
    measured: dict[int, int] = defaultdict(int)
    values: dict[tuple[int, str], list[float]] = defaultdict(list)
    for system_id, *figures in (
        current_metrics().filter(output__in=outputs).order_by().values_list("output__system_id", *keys)
    ):
        measured[system_id] += 1
        for key, value in zip(keys, figures, strict=True):
            if value is not None:
                values[(system_id, key)].append(value)
    return {
        system_id: SystemAudioFigures(
            with_audio=with_audio.get(system_id, 0),
            measured=measured[system_id],
            summaries={metric.key: summarise(values[(system_id, metric.key)], metric) for metric in METRICS},
        )
        for system_id in system_ids
    }


# --- Every output's figures, filtered and sorted (the output drill-down) --------------------------

METRIC_KEYS = frozenset(metric.key for metric in METRICS)


def output_figures(
    benchmark_version: str,
    *,
    system_id: int | None = None,
    metric: str = "",
    low: float | None = None,
    high: float | None = None,
    sort: str = "",
) -> QuerySet[OutputAudioMetrics]:
    """Return the current measurements of the version's outputs, of one system when given, whose
    `metric` lies in [low, high] (either bound optional), sorted by `sort` (a metric key, "-" first
    for descending; outputs the metric could not be measured on last), else by item and system."""
    rows = (
        current_metrics()
        .filter(output__in=ModelOutput.objects.for_version(benchmark_version))
        .select_related("output__item", "output__system")
    )
    if system_id is not None:
        rows = rows.filter(output__system_id=system_id)
    if metric in METRIC_KEYS:
        if low is not None:
            rows = rows.filter(**{f"{metric}__gte": low})
        if high is not None:
            rows = rows.filter(**{f"{metric}__lte": high})
    key = sort.removeprefix("-")
    if key in METRIC_KEYS:
        field = F(key).desc(nulls_last=True) if sort.startswith("-") else F(key).asc(nulls_last=True)
        return rows.order_by(field, "output__item__external_id", "output__system__name")
    return rows.order_by("output__item__external_id", "output__system__name")
