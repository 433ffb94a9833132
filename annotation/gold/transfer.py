"""Export gold references with their items and audio, and import them back, as JSONL or a HF dataset.

One row per item with a current gold reference:

    {"id": "EE-0001", "text": ..., "scenario": ..., "target_emotion": ..., "emotion_variant": ...,
     "target_intensity": ..., "split": ..., "instructions": ...,
     "audio": <see below>, "duration_seconds": 3.2,
     "perception": {...}, "tom": {...}            (annotation.labelling.schema documents)
     "reference_response": ..., "gold_version": 2, "adjudicated_by": "lead", "adjudicated_at": ISO,
     "fast_tracked": false, "adjudication_note": ...,
     "annotations": [{"annotator": "ann1", "perception": {...}, "tom": {...}, "submitted_at": ISO}, ...]}

An export folder holds both formats:
- `gold.jsonl`, with "audio" the path of a WAV file under `audio/` (relative to the JSONL file);
- `data/<split>-00000-of-00001.parquet` and a `README.md` dataset card, loadable with
  `datasets.load_dataset(folder)`, with "audio" a `datasets.Audio` column embedding the WAV bytes.

Import takes either (a JSONL file, a parquet file, or an export folder), checks every row first
and imports nothing when any row is wrong, naming the row and field. Items missing from the
studio are created with their audio as an accepted take; each row adds a gold version; individual
annotations are imported for annotators who have accounts here and counted as skipped otherwise.
"""

from __future__ import annotations

import io
import json
import re
import wave
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from django.db import transaction
from django.db.models import Prefetch, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.audio.upload import AudioRejected, normalise_upload
from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation, AnnotationRevision, Strategy
from annotation.labelling.schema import (
    check_perception,
    check_tom,
    empty_perception,
    empty_tom,
    normalise_perception,
    normalise_tom,
    script_words,
)
from annotation.recording.models import Emotion, Intensity, Item, Scenario, Split, Take
from webapp.models import User
from webapp.storage import new_media_key, read_media, save_media

JSONL_NAME = "gold.jsonl"
AUDIO_FOLDER = "audio"
PARQUET_FOLDER = "data"
SAMPLE_RATE = 16_000
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class GoldImportError(Exception):
    def __init__(self, problems: Sequence[RowProblem]) -> None:
        self.problems = list(problems)
        shown = "; ".join(str(problem) for problem in self.problems[:20])
        more = f" (and {len(self.problems) - 20} more)" if len(self.problems) > 20 else ""
        super().__init__(f"Nothing was imported: {shown}{more}")


@dataclass(frozen=True)
class RowProblem:
    row: int  # 1-based
    field: str
    message: str

    def __str__(self) -> str:
        return f"row {self.row}, {self.field}: {self.message}"


@dataclass(frozen=True)
class ExportSummary:
    rows: int
    jsonl_path: Path | None
    parquet_paths: list[Path]


@dataclass
class ImportSummary:
    rows: int = 0
    items_created: int = 0
    takes_created: int = 0
    gold_created: int = 0
    annotations_imported: int = 0
    annotations_skipped: int = 0
    unknown_annotators: set[str] = field(default_factory=set)


# --- Schema -------------------------------------------------------------------------------------


def gold_features() -> datasets.Features:
    """Return the HF dataset schema of an export (perception and ToM as typed structs)."""
    text = datasets.Value("string")
    perception = {
        name: datasets.Value("bool") if isinstance(default, bool) else text
        for name, default in empty_perception().items()
        if not isinstance(default, list)
    }
    perception["stressed_words"] = datasets.List(text)
    perception["emotion_segments"] = datasets.List(
        {"start": datasets.Value("float64"), "end": datasets.Value("float64"), "emotion": text, "words": text}
    )
    tom = {
        name: datasets.List(text) if isinstance(default, list) else text
        for name, default in empty_tom().items()
    }
    return datasets.Features(
        {
            "id": text,
            "text": text,
            "scenario": text,
            "target_emotion": text,
            "emotion_variant": text,
            "target_intensity": text,
            "split": text,
            "instructions": text,
            "audio": datasets.Audio(sampling_rate=SAMPLE_RATE, decode=False),
            "duration_seconds": datasets.Value("float64"),
            "perception": perception,
            "tom": tom,
            "reference_response": text,
            "gold_version": datasets.Value("int32"),
            "adjudicated_by": text,
            "adjudicated_at": text,
            "fast_tracked": datasets.Value("bool"),
            "adjudication_note": text,
            "annotations": datasets.List(
                {"annotator": text, "perception": perception, "tom": tom, "submitted_at": text}
            ),
        }
    )


# --- Export -------------------------------------------------------------------------------------


def gold_items(scenario: str | None = None, split: str | None = None) -> QuerySet[Item]:
    """Return items with a current gold reference, with everything an export row needs."""
    items = Item.objects.filter(gold_references__is_current=True)
    if scenario:
        items = items.filter(scenario=scenario)
    if split:
        items = items.filter(split=split)
    return items.select_related("recording").prefetch_related(
        Prefetch(
            "gold_references",
            queryset=GoldReference.objects.filter(is_current=True).select_related("adjudicated_by"),
            to_attr="current_gold",
        ),
        Prefetch(
            "annotations",
            queryset=Annotation.objects.filter(status=Annotation.Status.SUBMITTED)
            .select_related("annotator")
            .order_by("submitted_at", "pk"),
            to_attr="submitted",
        ),
    )


def export_rows(items: Iterable[Item]) -> Iterator[dict[str, Any]]:
    """Yield one export row per item, with "audio" as {"bytes", "path"} (or None without a recording)."""
    for item in items:
        gold: GoldReference = item.current_gold[0]  # type: ignore[attr-defined]
        recording = item.recording
        audio = None
        if recording is not None and recording.audio_key:
            audio = {"bytes": read_media(recording.audio_key), "path": audio_file_name(item.external_id)}
        yield {
            "id": item.external_id,
            "text": item.text,
            "scenario": item.scenario,
            "target_emotion": item.target_emotion,
            "emotion_variant": item.emotion_variant,
            "target_intensity": item.target_intensity,
            "split": item.split,
            "instructions": item.instructions,
            "audio": audio,
            "duration_seconds": recording.duration_seconds if recording else 0.0,
            "perception": normalise_perception(gold.perception),
            "tom": normalise_tom(gold.tom),
            "reference_response": gold.reference_response,
            "gold_version": gold.version,
            "adjudicated_by": gold.adjudicated_by.username if gold.adjudicated_by else "",
            "adjudicated_at": gold.created_at.isoformat(),
            "fast_tracked": gold.fast_tracked,
            "adjudication_note": gold.note,
            "annotations": [
                {
                    "annotator": annotation.annotator.username,
                    "perception": normalise_perception(annotation.perception),
                    "tom": normalise_tom(annotation.tom),
                    "submitted_at": annotation.submitted_at.isoformat() if annotation.submitted_at else "",
                }
                for annotation in item.submitted  # type: ignore[attr-defined]
            ],
        }


def audio_file_name(external_id: str) -> str:
    """Return a safe WAV file name for an item id."""
    return f"{_SAFE_NAME.sub('_', external_id)}.wav"


def export_gold(
    folder: Path,
    *,
    jsonl: bool = True,
    parquet: bool = True,
    scenario: str | None = None,
    split: str | None = None,
    on_row: Callable[[int, int], None] | None = None,
) -> ExportSummary:
    """Write the gold references (optionally of one scenario or split) into `folder`.

    Rows stream from the database to the files in batches, so an export of every item never
    holds all the audio in memory at once. `on_row(done, total)` follows the progress.
    """
    folder.mkdir(parents=True, exist_ok=True)
    jsonl_writer = JsonlWriter(folder) if jsonl else None
    parquet_writer = ParquetWriter(folder) if parquet else None
    items = gold_items(scenario, split)
    total = items.count() if on_row is not None else 0
    count = 0
    try:
        for row in export_rows(items.iterator(chunk_size=200)):
            if jsonl_writer is not None:
                jsonl_writer.write(row)
            if parquet_writer is not None:
                parquet_writer.write(row)
            count += 1
            if on_row is not None:
                on_row(count, total)
    finally:
        jsonl_path = jsonl_writer.close() if jsonl_writer is not None else None
        parquet_paths = parquet_writer.close() if parquet_writer is not None else []
    return ExportSummary(rows=count, jsonl_path=jsonl_path, parquet_paths=parquet_paths)


class JsonlWriter:
    """Writes rows to gold.jsonl, each row's audio to a WAV file under audio/ named in the row."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / AUDIO_FOLDER).mkdir(parents=True, exist_ok=True)
        self.path = folder / JSONL_NAME
        self._handle = self.path.open("w", encoding="utf-8")

    def write(self, row: Mapping[str, Any]) -> None:
        audio = row["audio"]
        relative = None
        if audio is not None:
            relative = f"{AUDIO_FOLDER}/{audio['path']}"
            (self.folder / relative).write_bytes(audio["bytes"])
        self._handle.write(json.dumps({**row, "audio": relative}, ensure_ascii=False) + "\n")

    def close(self) -> Path:
        self._handle.close()
        return self.path


class ParquetWriter:
    """Writes rows to one parquet file per split under data/, plus a dataset card, in batches."""

    BATCH_ROWS = 200

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / PARQUET_FOLDER).mkdir(parents=True, exist_ok=True)
        # Written with pyarrow against the dataset's own Arrow schema (which carries the `datasets`
        # feature metadata): datasets' Audio encoder would need torchcodec just to copy WAV bytes.
        self.schema = gold_features().arrow_schema
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._pending: dict[str, list[Mapping[str, Any]]] = {}

    def path_for(self, split_name: str) -> Path:
        return self.folder / PARQUET_FOLDER / f"{split_name}-00000-of-00001.parquet"

    def write(self, row: Mapping[str, Any]) -> None:
        pending = self._pending.setdefault(row["split"], [])
        pending.append(row)
        if len(pending) >= self.BATCH_ROWS:
            self._flush(row["split"])

    def _flush(self, split_name: str) -> None:
        rows = self._pending.get(split_name) or []
        if not rows:
            return
        if split_name not in self._writers:
            self._writers[split_name] = pq.ParquetWriter(self.path_for(split_name), self.schema)
        self._writers[split_name].write_table(pa.Table.from_pylist(rows, schema=self.schema))
        self._pending[split_name] = []

    def close(self) -> list[Path]:
        for split_name in list(self._pending):
            self._flush(split_name)
        for writer in self._writers.values():
            writer.close()
        splits = sorted(self._writers)
        (self.folder / "README.md").write_text(_dataset_card(splits), encoding="utf-8")
        return [self.path_for(split_name) for split_name in splits]


def _dataset_card(splits: Sequence[str]) -> str:
    data_files = "".join(
        f"  - split: {name}\n    path: {PARQUET_FOLDER}/{name}-*.parquet\n" for name in splits
    )
    return (
        "---\nconfigs:\n- config_name: default\n  data_files:\n"
        + data_files
        + "---\n\n# EchoEval gold references\n\n"
        "Adjudicated perception and Theory-of-Mind references with the items and their audio "
        "(16 kHz mono WAV), exported from EchoStudio. `perception` and `tom` follow "
        "`annotation/label_schema.py`; `annotations` holds each annotator's submitted labels.\n"
    )


# --- Reading ------------------------------------------------------------------------------------


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Return the rows of a JSONL file, a parquet file, or an export folder, with audio as bytes."""
    if path.is_dir():
        if (path / JSONL_NAME).exists():
            return read_jsonl(path / JSONL_NAME)
        files = sorted((path / PARQUET_FOLDER).glob("*.parquet")) or sorted(path.glob("*.parquet"))
        if not files:
            raise GoldImportError(
                [RowProblem(0, "file", f"{path} holds no {JSONL_NAME} and no parquet files")]
            )
        return [row for file in files for row in read_parquet(file)]
    if path.suffix == ".parquet":
        return read_parquet(path)
    return read_jsonl(path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Return the rows of a JSONL export, reading each audio file named relative to it."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise GoldImportError([RowProblem(number, "line", f"not JSON ({error})")]) from None
        if not isinstance(row, dict):
            raise GoldImportError([RowProblem(number, "line", "not a JSON object")])
        audio = row.get("audio")
        if isinstance(audio, str) and audio:
            audio_path = (path.parent / audio).resolve()
            if path.parent.resolve() not in audio_path.parents or not audio_path.is_file():
                raise GoldImportError(
                    [RowProblem(number, "audio", f"no audio file {audio!r} beside the JSONL")]
                )
            row["audio"] = {"bytes": audio_path.read_bytes(), "path": audio_path.name}
        rows.append(row)
    return rows


def read_parquet(path: Path) -> list[dict[str, Any]]:
    """Return the rows of one parquet file of an export."""
    return list(pq.read_table(path).to_pylist())


# --- Import -------------------------------------------------------------------------------------


def check_rows(rows: Sequence[Mapping[str, Any]], strategy_slugs: set[str]) -> list[RowProblem]:
    """Return every problem of every row (empty: the rows can be imported)."""
    problems: list[RowProblem] = []
    seen: set[str] = set()
    vocabularies = {
        "scenario": Scenario.values,
        "target_emotion": Emotion.values,
        "target_intensity": Intensity.values,
        "split": Split.values,
    }
    for number, row in enumerate(rows, start=1):
        external_id = row.get("id")
        if not isinstance(external_id, str) or not external_id.strip():
            problems.append(RowProblem(number, "id", "missing"))
            continue
        if external_id in seen:
            problems.append(RowProblem(number, "id", f"{external_id} appears twice"))
        seen.add(external_id)
        if not isinstance(row.get("text"), str) or not row["text"].strip():
            problems.append(RowProblem(number, "text", "missing"))
            continue
        for name, allowed in vocabularies.items():
            if row.get(name) not in allowed:
                problems.append(
                    RowProblem(number, name, f"{row.get(name)!r} is not one of {', '.join(allowed)}")
                )
        problems += _label_problems(number, "", row, row["text"], row.get("scenario"), strategy_slugs)
        annotations = row.get("annotations") or []
        if not isinstance(annotations, list):
            problems.append(RowProblem(number, "annotations", "must be a list"))
            continue
        for index, annotation in enumerate(annotations, start=1):
            prefix = f"annotations[{index}]."
            if not isinstance(annotation, Mapping) or not annotation.get("annotator"):
                problems.append(RowProblem(number, prefix + "annotator", "missing"))
                continue
            problems += _label_problems(
                number, prefix, annotation, row["text"], row.get("scenario"), strategy_slugs
            )
    return problems


def _label_problems(
    number: int, prefix: str, labels: Mapping[str, Any], text: str, scenario: object, strategy_slugs: set[str]
) -> list[RowProblem]:
    perception, tom = labels.get("perception"), labels.get("tom")
    if not isinstance(perception, Mapping) or not isinstance(tom, Mapping):
        return [RowProblem(number, prefix + "perception/tom", "both must be objects")]
    found = check_perception(
        normalise_perception(perception),
        emotion_shift=scenario == Scenario.EMOTION_SHIFT,
        words=script_words(text),
        complete=True,
    ) + check_tom(normalise_tom(tom), strategy_slugs=strategy_slugs, complete=True)
    return [RowProblem(number, prefix + problem.field, problem.message) for problem in found]


def import_gold(path: Path, *, imported_by: User) -> ImportSummary:
    """Import the rows at `path` (JSONL, parquet or an export folder); all or nothing."""
    rows = read_rows(path)
    problems = check_rows(rows, set(Strategy.objects.values_list("slug", flat=True)))
    if problems:
        raise GoldImportError(problems)
    existing = Item.objects.in_bulk([row["id"] for row in rows], field_name="external_id")
    prepared_audio = {}
    for number, row in enumerate(rows, start=1):
        item = existing.get(row["id"])
        if item is not None and item.text != row["text"]:
            problems.append(RowProblem(number, "text", f"differs from the studio's item {item.external_id}"))
        if row.get("audio") and (item is None or item.recording_id is None):
            try:
                prepared_audio[row["id"]] = _importable_wav(
                    row["audio"]["bytes"], row["audio"].get("path") or ""
                )
            except AudioRejected as rejected:
                problems.append(RowProblem(number, "audio", rejected.reason))
    if problems:
        raise GoldImportError(problems)

    usernames = {a["annotator"] for row in rows for a in row.get("annotations") or []}
    usernames |= {row.get("adjudicated_by") or "" for row in rows}
    users = User.objects.in_bulk([name for name in usernames if name], field_name="username")
    summary = ImportSummary(rows=len(rows))
    with transaction.atomic():
        for row in rows:
            _import_row(
                row, existing.get(row["id"]), prepared_audio.get(row["id"]), users, imported_by, summary
            )
    return summary


def _importable_wav(data: bytes, name: str) -> tuple[bytes, float]:
    """Return 16 kHz mono 16-bit WAV bytes and their duration; such WAVs are kept byte for byte."""
    try:
        with wave.open(io.BytesIO(data)) as reader:
            if (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) == (SAMPLE_RATE, 1, 2):
                return data, reader.getnframes() / SAMPLE_RATE
    except (wave.Error, EOFError):
        pass
    normalised = normalise_upload(data, name or "audio")
    return normalised.wav_bytes, normalised.duration_seconds


def _import_row(
    row: Mapping[str, Any],
    item: Item | None,
    audio: tuple[bytes, float] | None,
    users: Mapping[str, User],
    imported_by: User,
    summary: ImportSummary,
) -> None:
    if item is None:
        item = Item.objects.create(
            external_id=row["id"],
            text=row["text"],
            scenario=row["scenario"],
            target_emotion=row["target_emotion"],
            emotion_variant=row.get("emotion_variant") or "",
            target_intensity=row["target_intensity"],
            split=row["split"],
            instructions=row.get("instructions") or "",
            state=Item.State.GOLD,
        )
        summary.items_created += 1
    if audio is not None and item.recording_id is None:
        key = save_media(new_media_key("take", "wav"), audio[0])
        # The importing admin stands in as the take's actor: the real performer is not known here.
        item.recording = Take.objects.create(
            item=item,
            actor=imported_by,
            status=Take.Status.ACCEPTED,
            audio_key=key,
            original_key=key,
            original_format="wav",
            duration_seconds=float(row.get("duration_seconds") or audio[1]),
            decided_at=timezone.now(),
        )
        summary.takes_created += 1

    sources = []
    for entry in row.get("annotations") or []:
        annotator = users.get(entry["annotator"])
        if annotator is None:
            summary.annotations_skipped += 1
            summary.unknown_annotators.add(entry["annotator"])
            continue
        sources.append(_import_annotation(item, annotator, entry))
        summary.annotations_imported += 1

    latest = item.gold_references.order_by("-version").values_list("version", flat=True).first() or 0
    version = max(latest + 1, int(row.get("gold_version") or 0))
    item.gold_references.filter(is_current=True).update(is_current=False)
    gold = GoldReference.objects.create(
        item=item,
        version=version,
        perception=normalise_perception(row["perception"]),
        tom=normalise_tom(row["tom"]),
        reference_response=row.get("reference_response") or "",
        adjudicated_by=users.get(row.get("adjudicated_by") or ""),
        fast_tracked=bool(row.get("fast_tracked")),
        note=row.get("adjudication_note") or "",
        imported=True,
        is_current=True,
    )
    adjudicated_at = _parse_time(row.get("adjudicated_at"))
    if adjudicated_at is not None:
        GoldReference.objects.filter(pk=gold.pk).update(created_at=adjudicated_at)
    gold.source_annotations.set(sources)
    summary.gold_created += 1
    item.state = Item.State.GOLD
    item.save(update_fields=["recording", "state", "updated_at"])


def _import_annotation(item: Item, annotator: User, entry: Mapping[str, Any]) -> Annotation:
    perception, tom = normalise_perception(entry["perception"]), normalise_tom(entry["tom"])
    submitted_at = _parse_time(entry.get("submitted_at")) or timezone.now()
    annotation, _ = Annotation.objects.get_or_create(item=item, annotator=annotator)
    annotation.perception, annotation.tom = perception, tom
    annotation.status = Annotation.Status.SUBMITTED
    annotation.submitted_at = submitted_at
    annotation.version += 1
    annotation.save()
    AnnotationRevision.objects.create(
        annotation=annotation, version=annotation.version, perception=perception, tom=tom
    )
    return annotation


def _parse_time(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        return parse_datetime(value)
    return None
