"""A finished build as a training-records folder that ``python -m ml.cli sft`` and the SFT job read.

The folder holds ``records.jsonl`` (``ml.core.training_records.TrainingRecord``, one per line:
single-turn samples, then every turn of each complete dialogue with the earlier turns as its
history), ``audio/`` (user audio) and ``response_audio/``, ``manifest.json`` (the build as the
dataset id, counts, provenance: stage versions, model names, prompt hashes, TTS, thresholds) and
``provenance.jsonl`` (per record: the models that wrote it, its emotion-consistency verdict and what
the speech models heard). The manifest carries B.6's statistics and the speech checks summed over
the records (``logic.speech_checks``: rate, stress against the asked emphasis, pauses, speaker
consistency across each dialogue's turns), which the build page shows.
Samples are streamed from the database in id order, never all held at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from annotation.audio.tts import TtsError
from ml.builder.config import BuildConfig
from ml.builder.export_versions import BuildExport, in_flight_refusal
from ml.builder.logic.speech_checks import SpeechCheckSummary, summary_rows
from ml.builder.logic.statistics import STATISTICS_LABELS, DatasetStatistics
from ml.builder.models import Build, BuildDialogue, BuildSample, SampleStatus, SpotCheck
from ml.builder.pages.queue import HUMAN_DROP_REASONS, corrections
from ml.builder.stages import HIGH_AROUSAL, MODALITY_CONFLICT, TEXT_NEUTRAL
from ml.builder.steps.audio_steps import AudioStepContext, voice_response
from ml.core.training_records import (
    AUDIO_FOLDER,
    MANIFEST_FILE,
    RECORDS_FILE,
    HistoryTurn,
    TrainingRecord,
    render_gold_perception,
    render_gold_reasoning,
    strategy_display_names,
)
from webapp.jobs import JobReporter, JobResult, job_task
from webapp.lib.jsonlines import json_line
from webapp.lib.output_format import parse_output
from webapp.lib.row_outcome import RESULT_KEY, RowTally
from webapp.lib.vocabulary import AUDIO_DOMINANT, DEFAULT_STRATEGIES, IMPLICIT
from webapp.lib.vocabulary import HIGH_AROUSAL as HIGH_AROUSAL_SCENARIO
from webapp.lib.vocabulary import MODALITY_CONFLICT as CONFLICT_SCENARIO
from webapp.models import Job
from webapp.storage import read_media

RESPONSE_AUDIO_FOLDER = "response_audio"
PROVENANCE_FILE = "provenance.jsonl"
# The EchoEval scenario closest to each prompt variant (what judges and reports group by).
SCENARIO_OF_VARIANT = {
    TEXT_NEUTRAL: AUDIO_DOMINANT,
    HIGH_AROUSAL: HIGH_AROUSAL_SCENARIO,
    MODALITY_CONFLICT: CONFLICT_SCENARIO,
}
STREAM_CHUNK = 500


def record_of(
    sample: BuildSample,
    audio_path: str,
    history: tuple[HistoryTurn, ...] = (),
    fix: Mapping[str, Any] | None = None,
) -> TrainingRecord:
    """Return the training record of one finished sample, with an annotator's fix laid over it."""
    parsed = parse_output(sample.output)
    assert parsed.perception and parsed.reasoning, "only well-formed outputs pass the response filter"
    record = TrainingRecord(
        item_id=sample.external_id,
        audio_path=audio_path,
        scenario=SCENARIO_OF_VARIANT.get(sample.prompt_variant, IMPLICIT),
        emotion=sample.emotion,
        perception=parsed.perception.text,
        reasoning=parsed.reasoning.text,
        strategies=tuple(sample.strategies),
        speech_style=sample.speech_style,
        response=sample.response,
        text=sample.text,
        gold_perception=dict(sample.perception),
        gold_tom=dict(sample.tom),
        dialogue_id=sample.dialogue.external_id if sample.dialogue is not None else "",
        turn=sample.turn,
        history=history,
    )
    return with_fix(record, fix or {})


def with_fix(record: TrainingRecord, fix: Mapping[str, Any]) -> TrainingRecord:
    """Return the record with a spot-check fix (``pages.queue.corrections``) in place of the machine's.

    Corrected labels become the record's gold labels and its target spans are written from them, as
    for an annotated item (``record_from_gold``); a corrected response replaces the response. Empty
    values of the fix leave the machine's own.
    """
    changes: dict[str, Any] = {}
    perception, tom, response = fix.get("perception"), fix.get("tom"), fix.get("response")
    if perception:
        changes.update(
            gold_perception=dict(perception),
            perception=render_gold_perception(perception),
            emotion=str(perception.get("emotion") or record.emotion),
        )
    if tom:
        changes.update(gold_tom=dict(tom), reasoning=render_gold_reasoning(tom))
        if tom.get("recommended_strategies"):
            names = dict(DEFAULT_STRATEGIES)
            changes["strategies"] = strategy_display_names(tom["recommended_strategies"], names)
    if response:
        changes["response"] = str(response).strip()
    return replace(record, **changes)


def _chunks(rows: QuerySet[BuildSample]) -> Iterator[BuildSample]:
    yield from (
        rows.select_related("dialogue")
        .order_by("dialogue_id", "turn", "id")
        .iterator(chunk_size=STREAM_CHUNK)
    )


def _exported_dialogues(build: Build) -> QuerySet[BuildDialogue]:
    """Return the dialogues no pipeline stage dropped a turn of. A spot-check's drop may have cut
    one short (its turns before the dropped one stay) or dropped it whole (no turn stays)."""
    by_pipeline = BuildSample.objects.filter(build=build, status=SampleStatus.DROPPED).exclude(
        drop_reason__in=HUMAN_DROP_REASONS
    )
    return BuildDialogue.objects.filter(build=build).exclude(
        pk__in=by_pipeline.exclude(dialogue__isnull=True).values("dialogue_id")
    )


def decisions_of(build: Build) -> tuple[dict[str, int], list[int]]:
    """Return the spot-check decisions an export made now includes: counts by verdict, check ids."""
    decided = SpotCheck.objects.in_use().filter(build=build, submitted_at__isnull=False).order_by("id")
    counts = {"keep": 0, "fix": 0, "drop": 0}
    ids: list[int] = []
    for pk, verdict in decided.values_list("pk", "verdict"):
        counts[verdict] = counts.get(verdict, 0) + 1
        ids.append(pk)
    return counts, ids


def export_build(
    build: Build,
    folder: Path | None = None,
    version: BuildExport | None = None,
    on_written: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write the build's records into `folder` or the export `version`'s folder; return its counts.

    ``on_written`` hears the number of records written so far after each one (the job's progress).

    The manifest names the version, the spot-check decisions laid over the records and the
    re-runs (``tightenings``) the samples went through, so a job's data says what was decided.
    """
    target = folder or (Path(version.path) if version is not None else None)
    assert target is not None, "an export is written into a folder or an export version"
    (target / AUDIO_FOLDER).mkdir(parents=True, exist_ok=True)
    (target / RESPONSE_AUDIO_FOLDER).mkdir(parents=True, exist_ok=True)
    counts = {
        "single_turn": 0,
        "dialogues": 0,
        "dialogues_cut_short": 0,
        "dialogue_turns": 0,
        "fixed_by_annotators": 0,
        "response_audio_not_revoiced": 0,
    }
    statistics = DatasetStatistics()  # B.6's figures, from what is written
    speech_checks = SpeechCheckSummary()
    tts_failure: list[str] = []  # the first failure to voice a fixed reply, once there is one
    fixes = corrections(build)
    voicing = AudioStepContext.for_build(BuildConfig.from_json(build.config))
    with (
        (target / RECORDS_FILE).open("w", encoding="utf-8") as records,
        (target / PROVENANCE_FILE).open("w", encoding="utf-8") as provenance,
    ):

        def write(sample: BuildSample, history: tuple[HistoryTurn, ...]) -> HistoryTurn:
            """Write the sample's record, audio and provenance; return it as the next turns hear it."""
            audio_path = f"{AUDIO_FOLDER}/{sample.external_id}.wav"
            query_audio = read_media(sample.user_audio_key)
            (target / audio_path).write_bytes(query_audio)
            record = record_of(sample, audio_path, history, fixes.get(sample.pk))
            response_path = f"{RESPONSE_AUDIO_FOLDER}/{sample.external_id}.wav"
            response_audio, revoice_error = read_media(sample.response_audio_key), ""
            if record.response != sample.response:
                # An annotator's fixed reply is voiced anew, so the audio says what the record does.
                # When the TTS fails, the machine's audio stays, the provenance says why, and the
                # other fixes are not tried (a hung server would cost its timeout each time).
                revoice_error = tts_failure[0] if tts_failure else ""
                if not revoice_error:
                    try:
                        response_audio = voice_response(record.response, record.speech_style, voicing)
                    except (TtsError, ValueError, RuntimeError) as exc:
                        revoice_error = f"the fixed reply could not be voiced: {exc}"
                        tts_failure.append(revoice_error)
                counts["response_audio_not_revoiced"] += bool(revoice_error)
            (target / response_path).write_bytes(response_audio)
            statistics.add(record, query_audio, response_audio)
            speech_checks.add(sample.speech, record.dialogue_id)
            revoiced = record.response != sample.response and not revoice_error
            counts["fixed_by_annotators"] += sample.pk in fixes
            records.write(record.to_json() + "\n")
            facts = {
                "item_id": sample.external_id,
                "models": sample.models_used,
                "voice": sample.voice,
                "consistency": {k: v for k, v in sample.consistency.items() if k != "baseline"},
                "speech": sample.speech,
                "topic": sample.topic_path,
                "variant": sample.prompt_variant,
                "response_audio": response_path,
                "fixed_by_annotator": sample.pk in fixes,
                "response_audio_revoiced": revoiced,
                **({"response_audio_error": revoice_error} if revoice_error else {}),
            }
            provenance.write(json_line(facts, sort_keys=True))
            if on_written is not None:
                on_written(counts["single_turn"] + counts["dialogue_turns"] + 1)
            return HistoryTurn(sample.turn, sample.text, audio_path, record.response)

        for sample in _chunks(
            BuildSample.objects.filter(build=build).finished().filter(dialogue__isnull=True)
        ):
            write(sample, ())
            counts["single_turn"] += 1
        turns_per_dialogue = build.turns_per_dialogue
        history: list[HistoryTurn] = []
        current: int | None = None
        exported = set(_exported_dialogues(build).values_list("pk", flat=True))
        for sample in _chunks(
            BuildSample.objects.filter(build=build).finished().filter(dialogue_id__in=exported)
        ):
            if sample.dialogue_id != current:
                if history and len(history) < turns_per_dialogue:
                    counts["dialogues_cut_short"] += 1
                current, history = sample.dialogue_id, []
                counts["dialogues"] += 1
            # Turns 1..n and no gap: a spot-check cuts a dialogue's end, never a turn out of its middle.
            assert sample.turn == len(history) + 1, f"{sample.external_id}: a dialogue lost a turn"
            # The next turns hear the reply the record trains on, an annotator's fix included.
            history.append(write(sample, tuple(history)))
            counts["dialogue_turns"] += 1
        if history and len(history) < turns_per_dialogue:
            counts["dialogues_cut_short"] += 1
    decisions, decided_checks = decisions_of(build)
    reruns = len(build.provenance.get("tightenings", []))
    label = f"v{version.version}" if version is not None else ""
    manifest = {
        "snapshot": f"build-{build.pk}" + (f"/{label}" if label else ""),
        "build": {"id": build.pk, "name": build.name, "seed": build.seed},
        "version": version.version if version is not None else None,
        "counts": counts,
        "spot_check_decisions": {**decisions, "checks": decided_checks},
        "reruns": reruns,
        "statistics": statistics.to_json(),
        "speech_checks": speech_checks.to_json(),
        "provenance": build.provenance,
        "exported_at": timezone.now().isoformat(),
    }
    (target / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    now = timezone.now()
    if version is not None:
        BuildExport.objects.filter(pk=version.pk).update(
            counts=counts, decisions=decisions, reruns=reruns, finished_at=now
        )
    Build.objects.filter(pk=build.pk).update(export_path=str(target), exported_at=now)
    return counts


@job_task("builder_export", title="Export an EchoDialogue build as training records")
def builder_export_job(job: Job, reporter: JobReporter) -> JobResult:
    """Write the export version named in the job's parameters."""
    version = BuildExport.objects.select_related("build").filter(pk=job.parameters.get("export")).first()
    if version is None:
        return {"skipped": "the build or its export version was deleted"}
    if version.finished_at is not None:
        return {"skipped": f"{version.label} is written already; a version is never rewritten"}
    if refusal := in_flight_refusal(version.build):
        # Queued before a re-run began: its samples are being judged again, and the re-run
        # writes a version of its own when it finishes. This one stays unwritten.
        return {"skipped": f"{version.label} not written: {refusal}"}
    reporter.progress(0.0, f"Writing records and audio of {version.label}", force=True)
    # Finished samples bound the records (a dialogue a spot-check cut is written in part or not at all).
    expected = max(1, BuildSample.objects.filter(build=version.build).finished().count())

    def written(records: int) -> None:
        # The reporter writes at most every few seconds, so a 400K export shows its progress cheaply.
        reporter.progress(
            records / expected, f"Wrote {records:,} of about {expected:,} records of {version.label}"
        )

    counts = export_build(version.build, version=version, on_written=written)
    # All or nothing: a version is written whole or the job fails (a record that cannot be written
    # raises), so its tally reads succeeded with every record, or the job failed (docs/jobs.md).
    records = RowTally(int(counts["single_turn"]) + int(counts["dialogue_turns"]), 0, "records")
    return {"version": version.version, **counts, RESULT_KEY: records.as_result()}


def _last_manifest(build: Build) -> dict[str, Any]:
    """Return the manifest of the build's last export ({} before one)."""
    manifest = Path(build.export_path) / MANIFEST_FILE if build.export_path else None
    if manifest is None or not manifest.is_file():
        return {}
    loaded = json.loads(manifest.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}


def exported_statistics(build: Build) -> list[tuple[str, Any]] | None:
    """Return B.6's figures of the build's last export as (label, value) rows, None before one."""
    figures = _last_manifest(build).get("statistics")
    if not isinstance(figures, dict):
        return None  # none yet, or exported before the statistics were part of the manifest
    return [(label, figures.get(key)) for key, label in STATISTICS_LABELS.items()]


def exported_speech_checks(build: Build) -> list[tuple[str, str]] | None:
    """Return the speech checks of the build's last export as (label, value) rows, None before one."""
    figures = _last_manifest(build).get("speech_checks")
    return summary_rows(figures) if isinstance(figures, dict) else None
