"""Import gold references exported by `annotation.gold.export` (or written to its format elsewhere).

From a JSONL file, a parquet file or an export folder; with any wrong row (named with its field)
nothing is imported. Missing items are created with their audio as an accepted take; each row adds
a gold version; annotations come in for annotators with accounts here, the rest are counted.
"""

from __future__ import annotations

import io
import json
import wave
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.audio.upload import AudioRejected, normalise_upload
from annotation.gold.dialogue import rows as dialogue_rows
from annotation.gold.export import JSONL_NAME, PARQUET_FOLDER, SAMPLE_RATE
from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation, AnnotationRevision, Strategy
from annotation.labelling.schema import (
    check_perception,
    check_tom,
    normalise_perception,
    normalise_tom,
    script_words,
)
from annotation.recording.item_import import ITEM_FIELDS, FileProblem, checked_values, text_lines
from annotation.recording.models import Item, Scenario, Take
from webapp.models import User
from webapp.storage import new_media_key, save_media

MAX_ROWS = 200_000  # a gold file this long is a mistake; the check holds every row in memory


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
        return self.message if self.row == 0 else f"row {self.row}, {self.field}: {self.message}"


@dataclass
class ImportSummary:
    rows: int = 0
    items_created: int = 0
    takes_created: int = 0
    gold_created: int = 0
    annotations_imported: int = 0
    annotations_skipped: int = 0
    unknown_annotators: set[str] = field(default_factory=set)


# --- Reading ------------------------------------------------------------------------------------


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Return the rows of a JSONL file, a parquet file, or an export folder, with audio as bytes."""
    if path.is_dir():
        if (path / JSONL_NAME).exists():
            return read_jsonl(path / JSONL_NAME)
        files = sorted((path / PARQUET_FOLDER).glob("*.parquet")) or sorted(path.glob("*.parquet"))
        if not files:
            raise GoldImportError(
                [RowProblem(0, "file", f"{path.name} holds no {JSONL_NAME} and no parquet files")]
            )
        return [row for file in files for row in read_parquet(file)]
    if path.suffix == ".parquet":
        return read_parquet(path)
    return read_jsonl(path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Return the rows of a JSONL export, reading each audio file named relative to it.

    Lines are read as item files are (`item_import.text_lines`: UTF-8, a BOM, a line-length cap),
    and a file may hold at most MAX_ROWS rows: a hostile file ends in a message, not a traceback.
    """
    rows: list[dict[str, Any]] = []
    with path.open("rb") as stream:
        try:
            for number, line in enumerate(text_lines(stream), start=1):
                if line.strip():
                    rows.append(_jsonl_row(path, number, line, len(rows)))
        except FileProblem as problem:
            raise GoldImportError([RowProblem(0, "file", str(problem))]) from None
    return rows


def _jsonl_row(path: Path, number: int, line: str, rows_before: int) -> dict[str, Any]:
    if rows_before >= MAX_ROWS:
        raise GoldImportError(
            [RowProblem(0, "file", f"The file holds more than {MAX_ROWS:,} rows; split it.")]
        )
    try:
        row = json.loads(line)
    except RecursionError:
        raise GoldImportError([RowProblem(number, "line", "nested too deeply to be a gold row")]) from None
    except ValueError as error:
        raise GoldImportError([RowProblem(number, "line", f"not JSON ({error})")]) from None
    if not isinstance(row, dict):
        raise GoldImportError([RowProblem(number, "line", "not a JSON object")])
    row.pop("segment_audio", None)  # clips cut from the take on export: derived, never read back
    audio = row.get("audio")
    if isinstance(audio, str) and audio:
        audio_path = (path.parent / audio).resolve()
        if path.parent.resolve() not in audio_path.parents or not audio_path.is_file():
            raise GoldImportError([RowProblem(number, "audio", f"no audio file {audio!r} beside the JSONL")])
        row["audio"] = {"bytes": audio_path.read_bytes(), "path": audio_path.name}
    elif audio not in (None, ""):
        raise GoldImportError([RowProblem(number, "audio", "must name an audio file beside the JSONL")])
    if (refusal := dialogue_rows.read_history_audio(path.parent, row)) is not None:
        raise GoldImportError([RowProblem(number, "history", refusal)])
    return row


def read_parquet(path: Path) -> list[dict[str, Any]]:
    """Return the rows of one parquet file of an export (at most MAX_ROWS)."""
    import pyarrow.parquet as pq  # heavy: loaded by an import job, never by the web app

    try:
        rows = pq.ParquetFile(path).metadata.num_rows
        if rows > MAX_ROWS:
            raise GoldImportError(
                [RowProblem(0, "file", f"{path.name} holds {rows:,} rows, more than {MAX_ROWS:,}; split it.")]
            )
        return list(pq.read_table(path).to_pylist())
    except GoldImportError:
        raise
    except Exception as error:  # pyarrow's ArrowInvalid, OSError...: whatever the bytes were, not parquet
        raise GoldImportError(
            [RowProblem(0, "file", f"{path.name} is not a readable parquet file ({error}).")]
        ) from None


# --- Import -------------------------------------------------------------------------------------


def check_rows(rows: Sequence[dict[str, Any]], strategy_slugs: set[str]) -> list[RowProblem]:
    """Return every problem of every row (empty: the rows can be imported).

    The item fields follow the item import's rules (`item_import.checked_values`, the one home of
    what an item may hold); a row's values are normalised in place when they pass.
    """
    problems: list[RowProblem] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        record = {name: row.get("id" if name == "external_id" else name) for name in ITEM_FIELDS}
        values, item_errors = checked_values(number, record, "row")
        problems += [
            RowProblem(number, "id" if e.field == "external_id" else e.field, e.message.rstrip("."))
            for e in item_errors
        ]
        if values is not None:
            row.update(values, id=values["external_id"])
            if row["id"] in seen:
                problems.append(RowProblem(number, "id", f"{row['id']} appears twice"))
            seen.add(row["id"])
        shape = _shape_problems(number, row)
        problems += shape
        text, scenario = row.get("text"), row.get("scenario")
        if shape or not isinstance(text, str) or not text.strip():
            continue
        problems += _label_problems(number, "", row, text, scenario, strategy_slugs)
        problems += [
            RowProblem(number, name, text)
            for name, text in dialogue_rows.dialogue_problems(row, strategy_slugs)
        ]
        for index, annotation in enumerate(row.get("annotations") or [], start=1):
            problems += _label_problems(
                number, f"annotations[{index}].", annotation, text, scenario, strategy_slugs
            )
    return problems


def _shape_problems(number: int, row: Mapping[str, Any]) -> list[RowProblem]:
    """Return problems with the types of a row's other fields, and text PostgreSQL cannot store."""
    problems = []
    for name in ("reference_response", "adjudication_note", "adjudicated_by", "adjudicated_at"):
        if row.get(name) is not None and not isinstance(row[name], str | datetime):
            problems.append(RowProblem(number, name, "must be text"))
    for name in ("gold_version", "duration_seconds"):
        value = row.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
            problems.append(RowProblem(number, name, "must be a number, 0 or more"))
    if isinstance(row.get("adjudicated_at"), str) and row["adjudicated_at"]:
        try:
            if parse_datetime(row["adjudicated_at"]) is None:
                raise ValueError
        except ValueError:
            problems.append(RowProblem(number, "adjudicated_at", "is not a date and time (ISO 8601)"))
    annotations = row.get("annotations") or []
    if not isinstance(annotations, list):
        problems.append(RowProblem(number, "annotations", "must be a list"))
    else:
        for index, annotation in enumerate(annotations, start=1):
            if not isinstance(annotation, Mapping) or not isinstance(annotation.get("annotator"), str):
                problems.append(RowProblem(number, f"annotations[{index}].annotator", "missing"))
            elif annotation.get("submitted_at") is not None and not isinstance(
                annotation["submitted_at"], str | datetime
            ):
                problems.append(RowProblem(number, f"annotations[{index}].submitted_at", "must be text"))
    if _holds_nul({key: value for key, value in row.items() if key != "audio"}):
        problems.append(RowProblem(number, "row", "holds a NUL character (\\0), which cannot be stored"))
    return problems


def _holds_nul(value: object) -> bool:
    """Return True when any text inside `value` (nested dicts and lists) holds a NUL character."""
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            if "\x00" in current:
                return True
        elif isinstance(current, Mapping):
            pending.extend(current.keys())
            pending.extend(current.values())
        elif isinstance(current, list | tuple):
            pending.extend(current)
    return False


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
        if item is not None and item.turn != row.get("turn"):
            problems.append(RowProblem(number, "turn", f"differs from the studio's item {item.external_id}"))
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
        # The race: a lead adjudicating one of these items while the import runs. With the items
        # locked (in id order, as every workflow locks them) their gold versions follow one
        # another instead of both claiming the same next version.
        Item.objects.lock_all(item.pk for item in existing.values())
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
        dialogue_rows.attach_to_dialogue(item, row)
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

    gold = GoldReference.objects.add_current_version(
        item,
        actor=imported_by,
        at_least=int(row.get("gold_version") or 0),
        perception=normalise_perception(row["perception"]),
        tom=normalise_tom(row["tom"]),
        cross_turn=dialogue_rows.cross_turn_of(row, row.get("turn")),
        reference_response=row.get("reference_response") or "",
        adjudicated_by=users.get(row.get("adjudicated_by") or ""),
        fast_tracked=bool(row.get("fast_tracked")),
        note=row.get("adjudication_note") or "",
        imported=True,
    )
    adjudicated_at = _parse_time(row.get("adjudicated_at"))
    if adjudicated_at is not None:
        GoldReference.objects.filter(pk=gold.pk).update(created_at=adjudicated_at)
    gold.source_annotations.set(sources)
    summary.gold_created += 1
    item.state = Item.State.GOLD
    item.save(update_fields=["recording", "state", "updated_at"])


def _import_annotation(item: Item, annotator: User, entry: Mapping[str, Any]) -> Annotation:
    labels = {
        "perception": normalise_perception(entry["perception"]),
        "tom": normalise_tom(entry["tom"]),
        "cross_turn": dialogue_rows.cross_turn_of(entry, item.turn),
    }
    submitted_at = _parse_time(entry.get("submitted_at")) or timezone.now()
    annotation, _ = Annotation.objects.get_or_create(item=item, annotator=annotator)
    for name, value in labels.items():
        setattr(annotation, name, value)
    annotation.status = Annotation.Status.SUBMITTED
    annotation.submitted_at = submitted_at
    annotation.version += 1
    annotation.save()
    AnnotationRevision.objects.create(annotation=annotation, version=annotation.version, **labels)
    return annotation


def _parse_time(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        return parse_datetime(value)
    return None
