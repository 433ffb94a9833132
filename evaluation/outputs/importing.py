"""Importing a system's outputs for one benchmark version: JSONL rows plus response audio.

One row per item, a JSON object on its own line, in one of two shapes::

    {"item_id": "EE-0001", "output": "<think>…</think><response>…</response>", "audio": "EE-0001.wav"}
    {"item_id": "EE-0002", "perception": "…", "reasoning": "…" or {"context": "…", …},
     "strategy": "…" or ["…"], "response": "…", "audio": "clips/EE-0002.mp3"}

`output` is a whole answer (parsed in `evaluation.outputs.parsing`); the separate fields suit
systems prompted stage by stage. A dialogue's user turn may be named instead of its item, as
``{"dialogue_id": "ED-0001", "turn": 3, "output": …}``; its audio is then found as the turn's
item id (``ED-0001.t3.wav``) unless the row names a file. Response audio comes from a zip upload, a folder or an S3 prefix
(`evaluation.outputs.audio_sources`), named by the row's `audio` or found as <item_id>.<extension>.

Response audio is never stored as sent: each file is rebuilt from its decoded samples
(`annotation.audio.clean`) under a random key, so no tag a lab or encoder left in it (RIFF INFO, ID3,
Vorbis comments) reaches an evaluator. A file that cannot be decoded is a row problem like any other.

Validation is all-or-nothing unless the admin asks to skip bad rows: every problem (not JSON,
unknown item, duplicate item, missing or unreadable audio) is reported with its line and nothing is
imported. Importing again replaces the system's outputs for that version: changed outputs are
updated in place and lose their judgements (they judged other text), identical ones keep them,
and outputs absent from the new file are removed (within the import's ``scope``: the inference
job's dialogue run replaces dialogue turns' outputs only, its single-item run the others).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone

from annotation.audio.clean import clean_audio
from annotation.audio.upload import AudioRejected, detect_container
from annotation.recording.models import Item
from evaluation.outputs.audio_sources import AudioIndex, AudioSource, AudioTooLarge, AudioUnreadable
from evaluation.outputs.harnesses import (
    ECHOSTUDIO,
    HARNESS_FORMATS,
    HarnessRow,
    Placement,
    normal_text,
    placed_jsonl,
    read_harness,
)
from evaluation.outputs.models import ModelOutput, System
from evaluation.outputs.parsing import CONTENT_FIELDS, OutputRow, Problem, parse_rows
from evaluation.outputs.signals import outputs_changed
from webapp.archive import archive_rows
from webapp.db import backend_name, refresh_planner_statistics
from webapp.lib.stored_text import escaped_note
from webapp.storage import delete_media, new_media_key, read_media, save_media

# Which of the system's outputs an import replaces: all, single items' only, or dialogue turns' only.
ImportScope = Literal["all", "single", "dialogue"]


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


@dataclass(frozen=True)
class _ReadyRow:
    row: OutputRow
    item_pk: int
    audio_name: str
    audio_sha256: str
    clean_key: str  # the re-encoded audio stored for this import; "" when the current file is kept


def import_outputs(
    system: System,
    benchmark_version: str,
    jsonl: bytes,
    audio: AudioSource | None,
    *,
    skip_invalid_rows: bool = False,
    scope: ImportScope = "all",
    format_name: str = ECHOSTUDIO,
) -> ImportReport:
    """Validate an upload and, when it is clean (or bad rows may be skipped), replace the system's
    outputs for the benchmark version with it; return what was found and done.

    `format_name`: EchoStudio's JSONL, or a harness's result file (`harnesses.HARNESS_FORMATS`),
    whose rows are placed on items first; a row none places is reported like any bad row."""
    unplaced: list[Problem] = []
    if format_name in HARNESS_FORMATS:
        harness_rows, unplaced = read_harness(format_name, jsonl)
        jsonl, not_placed = placed_jsonl(harness_rows, _placement(harness_rows))
        unplaced += not_placed
    elif format_name != ECHOSTUDIO:
        raise ValueError(f"unknown output format {format_name!r}")
    rows, problems = parse_rows(jsonl) if jsonl.strip() or not unplaced else ([], [])
    problems = sorted([*unplaced, *problems], key=lambda problem: problem.line)
    report = ImportReport(rows=len(rows) + sum(1 for problem in problems if problem.line), errors=problems)
    report.warnings += [
        Problem(row.line, row.label, escaped_note(row.escaped_characters, backend_name()))
        for row in rows
        if row.escaped_characters
    ]
    stored: list[str] = []
    try:
        ready = _validate(system, benchmark_version, rows, audio, report, stored)
        report.skipped = report.rows - len(ready)
        if report.errors and not skip_invalid_rows:
            delete_media(*stored)
            return report
        if not ready:
            delete_media(*stored)
            report.errors.append(Problem(0, "", "no valid row to import"))
            return report
        _replace_outputs(system, benchmark_version, ready, report, scope)
    except BaseException:
        delete_media(*stored)
        raise
    report.imported = True
    return report


def _placement(rows: list[HarnessRow]) -> Placement:
    """Return what a harness file's rows may be placed by: the items they name by id, the audio
    checksums of accepted takes (only read when a row gives one), the scripts one item has."""
    ids = {row.item_id for row in rows if row.item_id}
    by_sha: list[tuple[str, str]] = []
    if any(row.audio_sha256 and not row.item_id for row in rows):
        by_sha = [
            (hashlib.sha256(read_media(key)).hexdigest(), external_id)
            for external_id, key in Item.objects.filter(recording__isnull=False).values_list(
                "external_id", "recording__audio_key"
            )
        ]
    by_text: list[tuple[str, str]] = []
    if any(row.question and not row.item_id and not row.audio_sha256 for row in rows):
        by_text = [
            (normal_text(text), external_id)
            for external_id, text in Item.objects.values_list("external_id", "text")
        ]
    known = frozenset(Item.objects.filter(external_id__in=ids).values_list("external_id", flat=True))
    return Placement(known, _unique(by_sha), _unique(by_text))


def _unique(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Return key -> item id for the keys one item has: a script or audio two items share places nothing."""
    counts = Counter(key for key, _ in pairs)
    return {key: external_id for key, external_id in pairs if counts[key] == 1}


def _validate(
    system: System,
    benchmark_version: str,
    rows: list[OutputRow],
    audio: AudioSource | None,
    report: ImportReport,
    stored: list[str],
) -> list[_ReadyRow]:
    """Check every row; re-encode and store the audio of the valid ones (keys appended to `stored`)."""
    rows = _resolved_turns(rows, report)
    items = dict(
        Item.objects.filter(external_id__in=[row.item_id for row in rows]).values_list("external_id", "pk")
    )
    # An audio file identical to the one an output already has is kept, not decoded again.
    current_sha = dict(
        ModelOutput.objects.for_version(benchmark_version)
        .filter(system=system)
        .values_list("item_id", "response_audio_sha256")
    )
    index = AudioIndex(audio.names() if audio is not None else ())
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
        checked = _check_audio(row, index, audio, current_sha.get(items[row.item_id], ""))
        if isinstance(checked, Problem):
            report.errors.append(checked)
            continue
        name, digest, key = checked
        used.add(name)
        if key:
            stored.append(key)
        ready.append(_ReadyRow(row, items[row.item_id], name, digest, key))
    unused = sorted(index.names - used)
    if unused and audio is not None:
        shown = ", ".join(unused[:5]) + (" …" if len(unused) > 5 else "")
        report.warnings.append(Problem(0, "", f"{len(unused)} audio file(s) not used by any row: {shown}"))
    return ready


def _resolved_turns(rows: list[OutputRow], report: ImportReport) -> list[OutputRow]:
    """Return the rows with each dialogue turn's item id found; unknown turns and rows naming one
    item twice (once by id, once by dialogue and turn) are reported and left out."""
    dialogue_ids = {row.dialogue_id for row in rows if row.dialogue_id}
    turns = {
        (dialogue, turn): external_id
        for dialogue, turn, external_id in Item.objects.filter(
            dialogue__external_id__in=dialogue_ids
        ).values_list("dialogue__external_id", "turn", "external_id")
    }
    first_line: dict[str, int] = {}
    resolved: list[OutputRow] = []
    for row in rows:
        if row.dialogue_id:
            external_id = turns.get((row.dialogue_id, row.turn))
            if external_id is None:
                report.errors.append(
                    Problem(
                        row.line,
                        row.label,
                        f"unknown dialogue turn: {row.dialogue_id} has no turn {row.turn}",
                    )
                )
                continue
            row = replace(row, item_id=external_id)
        if row.item_id in first_line:
            report.errors.append(
                Problem(
                    row.line,
                    row.label,
                    f"duplicate item: {row.item_id} already on line {first_line[row.item_id]}",
                )
            )
            continue
        first_line[row.item_id] = row.line
        resolved.append(row)
    return resolved


def _check_audio(
    row: OutputRow, index: AudioIndex, audio: AudioSource | None, current_sha256: str
) -> tuple[str, str, str] | Problem:
    """Return (file name, sha256 of the file as sent, key of its stored clean copy or "") or a problem."""
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
    except AudioUnreadable as exc:
        return Problem(row.line, row.item_id, f"audio {name} cannot be read: {exc}")
    if detect_container(data) is None:
        return Problem(row.line, row.item_id, f"audio {name} is not a recognised audio file")
    digest = hashlib.sha256(data).hexdigest()
    if digest == current_sha256:
        return name, digest, ""
    try:
        clean = clean_audio(data, f"audio {name}")
    except AudioRejected as rejected:
        return Problem(row.line, row.item_id, rejected.reason)
    return name, digest, save_media(new_media_key("model_output", "wav"), clean.wav_bytes)


def _replace_outputs(
    system: System,
    benchmark_version: str,
    ready: list[_ReadyRow],
    report: ImportReport,
    scope: ImportScope,
) -> None:
    unused_keys: list[str] = []
    replaced = ModelOutput.objects.for_version(benchmark_version).filter(system=system)
    if scope != "all":
        replaced = replaced.filter(item__dialogue__isnull=scope == "single")
    with transaction.atomic():
        # Two imports of the same system would interleave their replace: one at a time.
        System.objects.select_for_update().get(pk=system.pk)
        existing = {output.item_id: output for output in replaced}
        new_outputs: list[ModelOutput] = []
        changed: list[ModelOutput] = []
        stale_keys: list[str] = []
        now = timezone.now()
        for entry in ready:
            current = existing.pop(entry.item_pk, None)
            content = entry.row.content()
            if current is not None and _same_content(current, content, entry.audio_sha256):
                report.unchanged += 1
                if entry.clean_key:
                    unused_keys.append(entry.clean_key)
                continue
            key = entry.clean_key
            if (
                entry.audio_name
                and current is not None
                and current.response_audio_sha256 == entry.audio_sha256
            ):
                key = current.response_audio_key
                if entry.clean_key:
                    unused_keys.append(entry.clean_key)
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
            [*CONTENT_FIELDS, "response_audio_key", "response_audio_sha256", "imported_at"],
            batch_size=500,
        )
        # The judgements of a changed output scored other text: the judging side drops them
        # (a receiver of this signal), inside this transaction, so none survives a commit.
        removed = list(existing.values())
        answered_differently = [
            (system.pk, benchmark_version, output.item_id) for output in [*new_outputs, *removed]
        ]
        outputs_changed.send(sender=ModelOutput, outputs=changed, answered_differently=answered_differently)
        # Removed outputs are archived, their audio kept: restoring one brings it back whole.
        archive_rows(
            ModelOutput.objects.filter(pk__in=[output.pk for output in removed]),
            actor=None,
            reason=f"Not in the re-import of {system.name} for {benchmark_version}",
        )
        transaction.on_commit(lambda: delete_media(*stale_keys, *unused_keys))
        transaction.on_commit(lambda: refresh_planner_statistics(ModelOutput))
    report.created, report.updated, report.removed = len(new_outputs), len(changed), len(removed)


def _same_content(output: ModelOutput, content: Mapping[str, Any], audio_sha256: str) -> bool:
    return output.response_audio_sha256 == audio_sha256 and all(
        getattr(output, name) == value for name, value in content.items()
    )
