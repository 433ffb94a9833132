"""Importing a system's outputs for one benchmark version: JSONL rows plus response audio.

One row per item, a JSON object on its own line, in one of two shapes::

    {"item_id": "EE-0001", "output": "<think>…</think><response>…</response>", "audio": "EE-0001.wav"}
    {"item_id": "EE-0002", "perception": "…", "reasoning": "…" or {"context": "…", …},
     "strategy": "…" or ["…"], "response": "…", "audio": "clips/EE-0002.mp3"}

`output` is a whole answer: EchoChat's <think> format is split into its spans by
`webapp.lib.output_format.parse_output`; any other text is stored as given, as the response. The separate
fields suit systems prompted stage by stage. Response audio comes from a zip upload, a folder or an
S3 prefix, named by the row's `audio` or found as <item_id>.<extension>.

Validation is all-or-nothing unless the admin asks to skip bad rows: every problem (not JSON,
unknown item, duplicate item, missing or unreadable audio) is reported with its line and nothing is
imported. Importing again replaces the system's outputs for that version: changed outputs are
updated in place and lose their judgements (they judged other text), identical ones keep them,
and outputs absent from the new file are removed.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.audio.upload import ORIGINAL_EXTENSIONS, detect_container
from annotation.recording.models import Item
from evaluation.judging.models import HumanJudgement, Judgement
from evaluation.outputs.models import ModelOutput, System
from evaluation.results.reports import refresh_planner_statistics
from webapp.env import env_str
from webapp.lib.output_format import parse_output, parse_reasoning_fields, parse_strategy_names
from webapp.storage import delete_media, new_media_key, save_media

AUDIO_EXTENSIONS = ("wav", "mp3", "flac", "ogg", "m4a", "webm")
STAGE_FIELDS = ("perception", "reasoning", "strategy", "response")
KNOWN_FIELDS = frozenset({"item_id", "output", "audio", *STAGE_FIELDS})
REASONING_LABELS = {"context": "Context", "latent_need": "Latent need", "core_demand": "Core demand"}
_CONTENT_FIELDS = (
    "raw_text",
    "perception_text",
    "reasoning_text",
    "reasoning_fields",
    "strategy_text",
    "response_text",
    "structured",
    "parse_problems",
)


@dataclass(frozen=True)
class Problem:
    line: int  # 0: about the upload as a whole
    item_id: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "upload"
        return f"{where}{f' ({self.item_id})' if self.item_id else ''}: {self.message}"


@dataclass(frozen=True)
class OutputRow:
    line: int
    item_id: str
    raw_text: str
    perception_text: str
    reasoning_text: str
    reasoning_fields: dict[str, Any]
    strategy_text: str
    response_text: str
    structured: bool
    parse_problems: list[str]
    audio_name: str  # "" when the row names no file

    def content(self) -> dict[str, Any]:
        """Return the ModelOutput fields this row sets."""
        return {name: getattr(self, name) for name in _CONTENT_FIELDS}


@dataclass
class ImportReport:
    rows: int = 0
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    imported: bool = False
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: int = 0


# --- Parsing (pure) -----------------------------------------------------------------------------


def parse_rows(data: bytes) -> tuple[list[OutputRow], list[Problem]]:
    """Return the rows of a JSONL upload and the problems of the lines that are not valid rows."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [Problem(0, "", f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})")]
    rows: list[OutputRow] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            problems.append(Problem(number, "", f"not valid JSON ({exc})"))
            continue
        row_or_problem = _row_from_json(number, value)
        if isinstance(row_or_problem, Problem):
            problems.append(row_or_problem)
            continue
        row = row_or_problem
        if row.item_id in first_line:
            problems.append(
                Problem(number, row.item_id, f"duplicate item: already on line {first_line[row.item_id]}")
            )
            continue
        first_line[row.item_id] = number
        rows.append(row)
    if not rows and not problems:
        problems.append(Problem(0, "", "the file holds no rows"))
    return rows, problems


def _row_from_json(line: int, value: object) -> OutputRow | Problem:
    if not isinstance(value, dict):
        return Problem(line, "", "a row must be a JSON object")
    item_id = value.get("item_id")
    if not isinstance(item_id, str) or not item_id.strip():
        return Problem(line, "", 'missing "item_id"')
    item_id = item_id.strip()
    unknown = sorted(set(value) - KNOWN_FIELDS)
    if unknown:
        return Problem(line, item_id, f"unknown field(s): {', '.join(unknown)}")
    audio = value.get("audio") or ""
    if not isinstance(audio, str):
        return Problem(line, item_id, '"audio" must be a file name')
    given_stages = [name for name in STAGE_FIELDS if value.get(name) not in (None, "")]
    if "output" in value and given_stages:
        return Problem(
            line, item_id, f'give either "output" or separate fields, not both ({", ".join(given_stages)})'
        )
    if "output" in value:
        if not isinstance(value["output"], str):
            return Problem(line, item_id, '"output" must be text')
        return _row_from_output_text(line, item_id, value["output"], audio)
    if not given_stages:
        return Problem(line, item_id, 'no output: give "output" or perception/reasoning/strategy/response')
    return _row_from_fields(line, item_id, value, audio)


def _row_from_output_text(line: int, item_id: str, text: str, audio: str) -> OutputRow:
    parsed = parse_output(text)
    structured = any(span is not None for span in (parsed.perception, parsed.reasoning, parsed.strategy))
    if not structured:
        # Free-form answers of other systems are kept as they are; the whole text is the response.
        return OutputRow(line, item_id, text, "", "", {}, "", text.strip(), False, [], audio)
    reasoning = parsed.span_text("reasoning")
    strategy = parsed.span_text("strategy")
    fields: dict[str, Any] = dict(parse_reasoning_fields(reasoning))
    strategies = parse_strategy_names(strategy)
    if strategies:
        fields["strategy"] = strategies
    return OutputRow(
        line,
        item_id,
        text,
        parsed.span_text("perception"),
        reasoning,
        fields,
        strategy,
        parsed.span_text("response"),
        True,
        list(parsed.problems),
        audio,
    )


def _row_from_fields(line: int, item_id: str, value: Mapping[str, Any], audio: str) -> OutputRow | Problem:
    texts: dict[str, str] = {}
    for name in ("perception", "response"):
        field_value = value.get(name) or ""
        if not isinstance(field_value, str):
            return Problem(line, item_id, f'"{name}" must be text')
        texts[name] = field_value

    strategy = value.get("strategy") or ""
    if isinstance(strategy, list) and all(isinstance(name, str) for name in strategy):
        strategy_names, strategy_text = list(strategy), "; ".join(strategy)
    elif isinstance(strategy, str):
        strategy_names, strategy_text = parse_strategy_names(strategy), strategy
    else:
        return Problem(line, item_id, '"strategy" must be text or a list of names')

    reasoning = value.get("reasoning") or ""
    fields: dict[str, Any] = {}
    if isinstance(reasoning, dict):
        if not all(isinstance(part, str | list) for part in reasoning.values()):
            return Problem(line, item_id, '"reasoning" fields must be text or lists')
        fields = dict(reasoning)
        if strategy_names and "strategy" not in fields:
            fields["strategy"] = strategy_names
        # Shown to judges and evaluators as labelled lines, the way EchoChat writes them.
        reasoning_text = "\n".join(
            f"{REASONING_LABELS.get(name, name.replace('_', ' ').capitalize())}: {_as_text(part)}"
            for name, part in reasoning.items()
        )
    elif isinstance(reasoning, str):
        reasoning_text = reasoning
    else:
        return Problem(line, item_id, '"reasoning" must be text or an object of fields')

    return OutputRow(
        line,
        item_id,
        "",
        texts["perception"],
        reasoning_text,
        fields,
        strategy_text,
        texts["response"],
        False,
        [],
        audio,
    )


def _as_text(value: str | list[Any]) -> str:
    return value if isinstance(value, str) else "; ".join(str(part) for part in value)


# --- Audio sources --------------------------------------------------------------------------------


class AudioSource(Protocol):
    """Where an import's response audio files are: names relative to the source's root."""

    def names(self) -> frozenset[str]: ...

    def read(self, name: str) -> bytes: ...


class AudioTooLarge(ValueError):
    """An audio file is larger than ECHOSTUDIO_UPLOAD_MAX_BYTES."""


class ZipAudioSource:
    """Audio files inside a zip archive (macOS resource forks ignored)."""

    def __init__(self, file: IO[bytes] | str | Path) -> None:
        self._zip = zipfile.ZipFile(file)
        self._infos = {
            info.filename: info
            for info in self._zip.infolist()
            if not info.is_dir() and not info.filename.startswith("__MACOSX/")
        }

    def names(self) -> frozenset[str]:
        return frozenset(self._infos)

    def read(self, name: str) -> bytes:
        info = self._infos[name]
        # Checked before decompressing: a small archive can expand to gigabytes.
        if info.file_size > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{info.file_size} bytes")
        return self._zip.read(info)


class DirectoryAudioSource:
    """Audio files under a local folder (management command)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._names = frozenset(
            path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()
        )

    def names(self) -> frozenset[str]:
        return self._names

    def read(self, name: str) -> bytes:
        path = self.root / name
        if path.stat().st_size > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{path.stat().st_size} bytes")
        return path.read_bytes()


class S3AudioSource:
    """Audio files under an S3 prefix such as s3://bucket/runs/qwen3-omni/ (boto3 credentials)."""

    def __init__(self, uri: str, client: Any = None) -> None:
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        if not uri.startswith("s3://") or not bucket:
            raise ValueError("an S3 prefix looks like s3://bucket/folder/")
        if client is None:
            import boto3

            client = boto3.client(
                "s3",
                endpoint_url=env_str("AWS_S3_ENDPOINT_URL") or None,
                region_name=env_str("AWS_S3_REGION_NAME") or None,
            )
        self.client, self.bucket = client, bucket
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self._sizes: dict[str, int] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=self.prefix):
            for entry in page.get("Contents", []):
                name = entry["Key"][len(self.prefix) :]
                if name and not name.endswith("/"):
                    self._sizes[name] = int(entry.get("Size", 0))

    def names(self) -> frozenset[str]:
        return frozenset(self._sizes)

    def read(self, name: str) -> bytes:
        if self._sizes[name] > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{self._sizes[name]} bytes")
        response = self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)
        return bytes(response["Body"].read())


class _AudioIndex:
    """Finds a row's file by its exact name, or by its base name when that is unambiguous."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self.by_basename: dict[str, list[str]] = {}
        for name in sorted(self.names):
            self.by_basename.setdefault(PurePosixPath(name).name, []).append(name)

    def find(self, row: OutputRow) -> str | None:
        wanted = [row.audio_name] if row.audio_name else [f"{row.item_id}.{ext}" for ext in AUDIO_EXTENSIONS]
        for name in wanted:
            cleaned = name.lstrip("./")
            if cleaned in self.names:
                return cleaned
            matches = self.by_basename.get(PurePosixPath(cleaned).name, [])
            if len(matches) == 1:
                return matches[0]
        return None


# --- Import (Django) ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ReadyRow:
    row: OutputRow
    item_pk: int
    audio_name: str
    audio_sha256: str
    audio_extension: str


def import_outputs(
    system: System,
    benchmark_version: str,
    jsonl: bytes,
    audio: AudioSource | None,
    *,
    skip_invalid_rows: bool = False,
) -> ImportReport:
    """Validate an upload and, when it is clean (or bad rows may be skipped), replace the system's
    outputs for the benchmark version with it; return what was found and done."""
    rows, problems = parse_rows(jsonl)
    report = ImportReport(rows=len(rows) + sum(1 for problem in problems if problem.line), errors=problems)
    ready = _validate(system, rows, audio, report)
    report.skipped = report.rows - len(ready)
    if report.errors and not skip_invalid_rows:
        return report
    if not ready:
        report.errors.append(Problem(0, "", "no valid row to import"))
        return report
    _replace_outputs(system, benchmark_version, ready, audio, report)
    report.imported = True
    return report


def _validate(
    system: System, rows: list[OutputRow], audio: AudioSource | None, report: ImportReport
) -> list[_ReadyRow]:
    items = dict(
        Item.objects.filter(external_id__in=[row.item_id for row in rows]).values_list("external_id", "pk")
    )
    index = _AudioIndex(audio.names() if audio is not None else ())
    used: set[str] = set()
    ready: list[_ReadyRow] = []
    for row in rows:
        if row.item_id not in items:
            report.errors.append(Problem(row.line, row.item_id, "unknown item: no item has this id"))
            continue
        if system.text_only:
            if row.audio_name:
                report.warnings.append(
                    Problem(row.line, row.item_id, "audio ignored: the system is text-only")
                )
            ready.append(_ReadyRow(row, items[row.item_id], "", "", ""))
            continue
        checked = _check_audio(row, index, audio)
        if isinstance(checked, Problem):
            report.errors.append(checked)
            continue
        name, digest, extension = checked
        used.add(name)
        ready.append(_ReadyRow(row, items[row.item_id], name, digest, extension))
    unused = sorted(index.names - used)
    if unused and audio is not None:
        shown = ", ".join(unused[:5]) + (" …" if len(unused) > 5 else "")
        report.warnings.append(Problem(0, "", f"{len(unused)} audio file(s) not used by any row: {shown}"))
    return ready


def _check_audio(
    row: OutputRow, index: _AudioIndex, audio: AudioSource | None
) -> tuple[str, str, str] | Problem:
    if audio is None:
        return Problem(row.line, row.item_id, "missing audio: upload a zip or give an S3 prefix")
    name = index.find(row)
    if name is None:
        wanted = row.audio_name or f"{row.item_id}.wav (or .mp3, .flac …)"
        return Problem(row.line, row.item_id, f"missing audio: no file {wanted} in the audio source")
    try:
        data = audio.read(name)
    except AudioTooLarge as exc:
        return Problem(row.line, row.item_id, f"audio {name} is too large ({exc})")
    container = detect_container(data)
    if container is None:
        return Problem(row.line, row.item_id, f"audio {name} is not a recognised audio file")
    return name, hashlib.sha256(data).hexdigest(), ORIGINAL_EXTENSIONS[container]


def _replace_outputs(
    system: System,
    benchmark_version: str,
    ready: list[_ReadyRow],
    audio: AudioSource | None,
    report: ImportReport,
) -> None:
    saved_keys: list[str] = []
    try:
        with transaction.atomic():
            # Two imports of the same system would interleave their replace: one at a time.
            System.objects.select_for_update().get(pk=system.pk)
            existing = {
                output.item_id: output
                for output in ModelOutput.objects.filter(system=system, benchmark_version=benchmark_version)
            }
            new_outputs: list[ModelOutput] = []
            changed: list[ModelOutput] = []
            stale_keys: list[str] = []
            now = timezone.now()
            for entry in ready:
                current = existing.pop(entry.item_pk, None)
                content = entry.row.content()
                if current is not None and _same_content(current, content, entry.audio_sha256):
                    report.unchanged += 1
                    continue
                key = ""
                if entry.audio_name and audio is not None:
                    if current is not None and current.response_audio_sha256 == entry.audio_sha256:
                        key = current.response_audio_key
                    else:
                        key = save_media(
                            new_media_key("model_output", entry.audio_extension), audio.read(entry.audio_name)
                        )
                        saved_keys.append(key)
                if current is None:
                    new_outputs.append(
                        ModelOutput(
                            system=system,
                            item_id=entry.item_pk,
                            benchmark_version=benchmark_version,
                            response_audio_key=key,
                            response_audio_sha256=entry.audio_sha256,
                            **content,
                        )
                    )
                    continue
                if current.response_audio_key and current.response_audio_key != key:
                    stale_keys.append(current.response_audio_key)
                for name, value in content.items():
                    setattr(current, name, value)
                current.response_audio_key, current.response_audio_sha256 = key, entry.audio_sha256
                current.imported_at = now
                changed.append(current)

            ModelOutput.objects.bulk_create(new_outputs, batch_size=500)
            ModelOutput.objects.bulk_update(
                changed,
                [*_CONTENT_FIELDS, "response_audio_key", "response_audio_sha256", "imported_at"],
                batch_size=500,
            )
            # The judgements of a changed output scored other text: they would be wrong now.
            Judgement.objects.filter(output__in=changed).delete()
            HumanJudgement.objects.filter(output__in=changed).delete()
            removed = list(existing.values())
            stale_keys += [output.response_audio_key for output in removed if output.response_audio_key]
            ModelOutput.objects.filter(pk__in=[output.pk for output in removed]).delete()
            transaction.on_commit(lambda: delete_media(*stale_keys))
            transaction.on_commit(refresh_planner_statistics)
    except BaseException:
        delete_media(*saved_keys)
        raise
    report.created, report.updated, report.removed = len(new_outputs), len(changed), len(removed)


def _same_content(output: ModelOutput, content: Mapping[str, Any], audio_sha256: str) -> bool:
    return output.response_audio_sha256 == audio_sha256 and all(
        getattr(output, name) == value for name, value in content.items()
    )
