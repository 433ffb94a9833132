"""Read EchoEval items (scripts) from CSV or JSONL and check every row before anything is written.

The admin who imports a file must be able to fix it from the messages alone, so every problem
names its row (CSV: the spreadsheet row, the header being row 1; JSONL: the line) and its field.
Nothing here touches the database; `annotation.recording.items.import_items` writes what this module reads.

Columns (CSV header or JSON keys): external_id, text, scenario, target_emotion, and optionally
emotion_variant, target_intensity (default medium), instructions, split (default test). A few
aliases people use in spreadsheets are accepted (id, script, emotion, variant, intensity).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from webapp.lib.vocabulary import DEFAULT_INTENSITY, DEFAULT_SPLIT, EMOTIONS, INTENSITIES, SCENARIOS, SPLITS

ITEM_FIELDS = (
    "external_id",
    "text",
    "scenario",
    "target_emotion",
    "emotion_variant",
    "target_intensity",
    "instructions",
    "split",
)
REQUIRED_FIELDS = ("external_id", "text", "scenario", "target_emotion")
COLUMN_ALIASES = {
    "id": "external_id",
    "item_id": "external_id",
    "script": "text",
    "emotion": "target_emotion",
    "variant": "emotion_variant",
    "intensity": "target_intensity",
}
# Spellings found in the paper and in emotion datasets, mapped to our values.
VALUE_ALIASES = {
    "scenario": {"emotional-shift": "emotion-shift", "modality-conflicts": "modality-conflict"},
    "target_emotion": {
        "happiness": "happy",
        "joy": "happy",
        "sadness": "sad",
        "anger": "angry",
        "surprised": "surprise",
        "disgusted": "disgust",
        "fearful": "fear",
    },
}

EXTERNAL_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_TEXT_CHARS = 2000
MAX_VARIANT_CHARS = 64
MAX_INSTRUCTIONS_CHARS = 4000

Format = Literal["csv", "jsonl"]


@dataclass(frozen=True)
class ItemRow:
    """One valid row, with values normalised to what the Item model stores."""

    row: int
    external_id: str
    text: str
    scenario: str
    target_emotion: str
    emotion_variant: str
    target_intensity: str
    instructions: str
    split: str

    def values(self) -> dict[str, str]:
        """Return the item fields of the row (everything but the row number)."""
        return {name: getattr(self, name) for name in ITEM_FIELDS}


@dataclass(frozen=True)
class RowError:
    """A problem with one row (row 0: the file as a whole) and, when it is one, one field."""

    row: int
    field: str
    message: str
    row_label: str = "row"

    def __str__(self) -> str:
        if self.row == 0:
            return self.message
        where = f"{self.row_label.capitalize()} {self.row}"
        return f"{where}, {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


@dataclass(frozen=True)
class ParsedItems:
    format: Format
    rows: list[ItemRow] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    rows_read: int = 0

    @property
    def row_label(self) -> str:
        """Return what a row is called in messages: a spreadsheet row, or a line of JSONL."""
        return "line" if self.format == "jsonl" else "row"

    @property
    def file_errors(self) -> list[RowError]:
        """Return the problems of the file as a whole (they stop any import)."""
        return [error for error in self.errors if error.row == 0]

    @property
    def invalid_rows(self) -> int:
        """Return how many rows have at least one problem."""
        return len({error.row for error in self.errors if error.row})


def detect_format(data: bytes, filename: str) -> Format:
    """Return "jsonl" or "csv": from the file name's extension, else from the first character."""
    name = filename.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    return "jsonl" if data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{" else "csv"


def parse_items(data: bytes, filename: str) -> ParsedItems:
    """Return the valid rows of an item file and a message for every problem in it."""
    file_format = detect_format(data, filename)
    row_label = "line" if file_format == "jsonl" else "row"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        message = f"The file is not UTF-8 text (byte {error.start + 1} cannot be read). Save it as UTF-8."
        return ParsedItems(file_format, errors=[RowError(0, "", message)])
    records = _csv_records(text) if file_format == "csv" else _jsonl_records(text)

    rows: list[ItemRow] = []
    errors: list[RowError] = []
    first_row_of: dict[str, int] = {}
    rows_read = 0
    for number, record in records:
        if isinstance(record, RowError):
            errors.append(record)
            continue
        rows_read += 1
        row, row_errors = _check_row(number, record, row_label)
        # Compared case-blind, as people read ids; checked even on rows with other problems.
        external_id = str(record.get("external_id") or "").strip()
        earlier = first_row_of.setdefault(external_id.casefold(), number) if external_id else number
        if earlier != number:
            message = f"{external_id} already appears on {row_label} {earlier}."
            row_errors.append(RowError(number, "external_id", message, row_label))
            row = None
        if row_errors:
            errors.extend(row_errors)
        elif row is not None:
            rows.append(row)
    if rows_read == 0 and not errors:
        errors.append(RowError(0, "", "The file holds no items."))
    return ParsedItems(file_format, rows=rows, errors=errors, rows_read=rows_read)


RecordStream = Iterator[tuple[int, "Mapping[str, object] | RowError"]]


def _csv_records(text: str) -> RecordStream:
    sample = text[:4096]
    delimiter = "\t" if sample.count("\t") > sample.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next(reader, None)
    if header is None:
        return
    columns = [_column_name(name) for name in header]
    problem = _unknown_or_repeated_columns(columns) or _missing_columns(columns)
    if problem:
        yield 0, RowError(0, "", problem)
        return
    # Row numbers follow the spreadsheet: the header is row 1, so the first item is row 2.
    for number, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) > len(columns):
            yield number, RowError(number, "", f"has {len(cells)} cells but the header names {len(columns)}.")
            continue
        yield number, dict(zip(columns, cells, strict=False))


def _jsonl_records(text: str) -> RecordStream:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            yield number, RowError(number, "", f"is not valid JSON ({error.msg}).", "line")
            continue
        if not isinstance(value, dict):
            yield number, RowError(number, "", "must be one JSON object per line.", "line")
            continue
        renamed = {_column_name(str(key)): item for key, item in value.items()}
        # A line may leave out optional keys; missing required ones are reported per field.
        problem = _unknown_or_repeated_columns(list(renamed))
        if problem:
            yield number, RowError(number, "", problem, "line")
            continue
        yield number, renamed


def _column_name(name: str) -> str:
    key = re.sub(r"[\s-]+", "_", name.strip().lower())
    return COLUMN_ALIASES.get(key, key)


def _unknown_or_repeated_columns(columns: list[str]) -> str:
    unknown = [name for name in columns if name not in ITEM_FIELDS]
    if unknown:
        return (
            f"Unknown column{'s' if len(unknown) > 1 else ''} {', '.join(repr(n) for n in unknown)}; "
            f"item files have {', '.join(ITEM_FIELDS)}."
        )
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if repeated:
        return f"Column {', '.join(repr(n) for n in repeated)} appears more than once."
    return ""


def _missing_columns(columns: list[str]) -> str:
    missing = [name for name in REQUIRED_FIELDS if name not in columns]
    if missing:
        return f"Missing column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}."
    return ""


def _check_row(
    number: int, record: Mapping[str, object], row_label: str
) -> tuple[ItemRow | None, list[RowError]]:
    errors: list[RowError] = []

    def fail(name: str, message: str) -> None:
        errors.append(RowError(number, name, message, row_label))

    values: dict[str, str] = {}
    for name in ITEM_FIELDS:
        raw = record.get(name)
        if raw is None:
            values[name] = ""
        elif isinstance(raw, str):
            values[name] = raw.strip()
        elif name == "external_id" and isinstance(raw, int) and not isinstance(raw, bool):
            values[name] = str(raw)
        else:
            fail(name, f"must be text, not {type(raw).__name__}.")
            values[name] = ""

    for name in REQUIRED_FIELDS:
        if not values[name] and not any(error.field == name for error in errors):
            fail(name, "is required.")

    external_id = values["external_id"]
    if external_id and not EXTERNAL_ID_PATTERN.fullmatch(external_id):
        fail(
            "external_id",
            f"{external_id!r} is not a usable id: up to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit.",
        )
    for name, limit in (
        ("text", MAX_TEXT_CHARS),
        ("emotion_variant", MAX_VARIANT_CHARS),
        ("instructions", MAX_INSTRUCTIONS_CHARS),
    ):
        if len(values[name]) > limit:
            fail(name, f"is {len(values[name])} characters long; the limit is {limit}.")

    defaults = {"target_intensity": DEFAULT_INTENSITY, "split": DEFAULT_SPLIT}
    for name, allowed in (
        ("scenario", SCENARIOS),
        ("target_emotion", EMOTIONS),
        ("target_intensity", INTENSITIES),
        ("split", SPLITS),
    ):
        given = values[name]
        if not given:
            values[name] = defaults.get(name, "")
            continue
        normalised = re.sub(r"[\s_]+", "-", given.lower())
        normalised = VALUE_ALIASES.get(name, {}).get(normalised, normalised)
        if normalised in allowed:
            values[name] = normalised
        else:
            fail(name, f"{given!r} is not one of {', '.join(allowed)}.")

    if errors:
        return None, errors
    return ItemRow(row=number, **values), []
