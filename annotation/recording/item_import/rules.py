"""Read EchoEval items (scripts) from CSV or JSONL and check every row before anything is written.

The admin who imports a file must be able to fix it from the messages alone, so every problem
names its row (CSV: the spreadsheet row, the header being row 1; JSONL: the line) and its field.
Nothing here touches the database; `annotation.recording.items.import_items` writes what this module
reads, streaming: a file is read line by line, never whole, so its size does not matter.

Columns (CSV header or JSON keys): external_id, text, scenario, target_emotion, and optionally
emotion_variant, target_intensity (default medium), instructions, split (default test). A few
aliases people use in spreadsheets are accepted (id, script, emotion, variant, intensity).
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

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

# Hostile or mistaken files end in a clear message, never a traceback or an unbounded read: a line
# (a CSV record's line, a JSONL object) may hold at most MAX_LINE_BYTES, a file MAX_ROWS items.
MAX_LINE_BYTES = 1024 * 1024
MAX_ROWS = 1_000_000
DELIMITERS = (",", "\t", ";")

Format = Literal["csv", "jsonl"]


class FileProblem(ValueError):
    """The file as a whole cannot be read as items (the message says why, for the person importing)."""


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


def duplicate_error(number: int, external_id: str, earlier: int, row_label: str) -> RowError:
    """Return the problem of a row whose id (compared case-blind) an earlier row already has."""
    return RowError(
        number, "external_id", f"{external_id} already appears on {row_label} {earlier}.", row_label
    )


@dataclass(frozen=True)
class ParsedItems:
    """An item file read in memory: its rows checked one by one (repeated ids are the import's
    business: `annotation.recording.items` finds them in its staging table)."""

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


def detect_format(start: bytes, filename: str) -> Format:
    """Return "jsonl" or "csv": from the file name's extension, else from the first character."""
    name = filename.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    return "jsonl" if start.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{" else "csv"


RecordStream = Iterator[tuple[int, "Mapping[str, object] | RowError"]]


def read_records(stream: BinaryIO, filename: str) -> tuple[Format, RecordStream]:
    """Return the file's format and its records, read line by line (never the whole file at once).

    Each record is (row number, {column: value}) or (row number, RowError); a problem with the
    file as a whole comes as row 0 and ends the stream.
    """
    first = stream.readline(MAX_LINE_BYTES + 1)
    file_format = detect_format(first, filename)
    lines = text_lines(stream, first)
    records = _csv_records(lines) if file_format == "csv" else _jsonl_records(lines)
    return file_format, _capped(records)


def parse_items(data: bytes, filename: str) -> ParsedItems:
    """Return the valid rows of an item file in memory and a message for every problem in a row."""
    file_format, records = read_records(io.BytesIO(data), filename)
    row_label = "line" if file_format == "jsonl" else "row"
    rows: list[ItemRow] = []
    errors: list[RowError] = []
    rows_read = 0
    for number, record in records:
        rows_read += number != 0  # an unparseable line is a row read too, as in `items._load`
        if isinstance(record, RowError):
            errors.append(record)
            continue
        row, row_errors = check_row(number, record, row_label)
        errors.extend(row_errors)
        if row is not None:
            rows.append(row)
    if rows_read == 0 and not errors:
        errors.append(RowError(0, "", "The file holds no items."))
    return ParsedItems(file_format, rows=rows, errors=errors, rows_read=rows_read)


def text_lines(stream: BinaryIO, first: bytes | None = None) -> Iterator[str]:
    """Yield a file's lines as text (`first`: its first line, when already read), past a UTF-8 BOM;
    raise FileProblem for UTF-16, a line longer than MAX_LINE_BYTES, or bytes that are not UTF-8.
    The reading rules of every line-based import (items, gold JSONL)."""
    if first is None:
        first = stream.readline(MAX_LINE_BYTES + 1)
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FileProblem("The file is UTF-16 text; save it as UTF-8 (in Excel: CSV UTF-8).")
    raw, number = first.removeprefix(b"\xef\xbb\xbf"), 1
    while raw:
        if len(raw) > MAX_LINE_BYTES:
            raise FileProblem(
                f"Line {number} is longer than {MAX_LINE_BYTES // 1024} KiB, far more than one item needs; "
                "is this an item file (one item per line)?"
            )
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise FileProblem(
                f"Line {number} is not UTF-8 text (byte {error.start + 1} of the line cannot be read). "
                "Save the file as UTF-8."
            ) from None
        raw, number = stream.readline(MAX_LINE_BYTES + 1), number + 1


def _capped(records: RecordStream) -> RecordStream:
    """Pass records on, turning FileProblem into a file error and stopping after MAX_ROWS rows."""
    try:
        for count, (number, record) in enumerate(records, start=1):
            if count > MAX_ROWS:
                yield 0, RowError(0, "", f"The file holds more than {MAX_ROWS:,} items; split it.")
                return
            yield number, record
    except FileProblem as problem:
        yield 0, RowError(0, "", str(problem))
    except csv.Error as error:
        yield 0, RowError(0, "", f"The file cannot be read as CSV ({error}).")


def _csv_records(lines: Iterator[str]) -> RecordStream:
    header_line = next(lines, None)
    if header_line is None:
        return
    if "\x00" in header_line:
        raise FileProblem("The file holds NUL bytes: it is UTF-16 or not text. Save it as UTF-8 text.")
    delimiter = max(DELIMITERS, key=header_line.count)
    reader = csv.reader(itertools.chain([header_line], lines), delimiter=delimiter)
    columns = [_column_name(name) for name in next(reader)]
    problem = _unknown_or_repeated_columns(columns) or _missing_columns(columns)
    if problem:
        yield 0, RowError(0, "", problem)
        return
    required = sum(1 for name in columns if name in REQUIRED_FIELDS)
    # Row numbers follow the spreadsheet: the header is row 1, so the first item is row 2.
    for number, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) > len(columns):
            yield number, RowError(number, "", f"has {len(cells)} cells but the header names {len(columns)}.")
            continue
        if len(cells) < required and (other := _other_delimiter(delimiter.join(cells), delimiter)):
            message = (
                f"is separated by {other!r} but the header by {delimiter!r}; use one separator throughout."
            )
            yield number, RowError(number, "", message)
            continue
        yield number, dict(zip(columns, cells, strict=False))


def _other_delimiter(text: str, delimiter: str) -> str:
    return next((other for other in DELIMITERS if other != delimiter and text.count(other) >= 2), "")


def _jsonl_records(lines: Iterator[str]) -> RecordStream:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except RecursionError:
            yield number, RowError(number, "", "is nested too deeply to be an item.", "line")
            continue
        except ValueError as error:  # JSONDecodeError, or a number too long to read
            reason = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
            yield number, RowError(number, "", f"is not valid JSON ({reason}).", "line")
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


def check_row(
    number: int, record: Mapping[str, object], row_label: str
) -> tuple[ItemRow | None, list[RowError]]:
    """Return the row normalised, or None and every problem of its fields."""
    values, errors = checked_values(number, record, row_label)
    return (ItemRow(row=number, **values) if values is not None else None), errors


def checked_values(
    number: int, record: Mapping[str, object], row_label: str
) -> tuple[dict[str, str] | None, list[RowError]]:
    """Return a row's values normalised (in ITEM_FIELDS order), or None and every problem of its
    fields: the one home of the rules a row must follow, for every way items are imported."""
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
            if "\x00" in raw:  # PostgreSQL cannot store it, and no script holds one
                fail(name, "holds a NUL character (\\0); is the file UTF-16 or binary?")
                values[name] = ""
        elif name == "external_id" and isinstance(raw, int) and not isinstance(raw, bool):
            values[name] = str(raw)
        else:
            fail(name, f"must be text, not {type(raw).__name__}.")
            values[name] = ""

    for name in REQUIRED_FIELDS:
        if not values[name] and not (errors and any(error.field == name for error in errors)):
            fail(name, "is required.")

    external_id = values["external_id"]
    if external_id and not EXTERNAL_ID_PATTERN.fullmatch(external_id):
        shown = external_id if len(external_id) <= 80 else external_id[:80] + "…"
        fail(
            "external_id",
            f"{shown!r} is not a usable id: up to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit.",
        )
    for name, limit in (
        ("text", MAX_TEXT_CHARS),
        ("emotion_variant", MAX_VARIANT_CHARS),
        ("instructions", MAX_INSTRUCTIONS_CHARS),
    ):
        if len(values[name]) > limit:
            fail(name, f"is {len(values[name])} characters long; the limit is {limit}.")

    for name in VOCABULARY_FIELDS:
        given = values[name]
        normalised = _vocabulary_value(name, given)
        if normalised is not None:
            values[name] = normalised
        else:
            shown = given if len(given) <= 80 else given[:80] + "…"
            fail(name, f"{shown!r} is not one of {', '.join(VOCABULARY_FIELDS[name])}.")

    if errors:
        return None, errors
    return values, errors


VOCABULARY_FIELDS = {
    "scenario": SCENARIOS,
    "target_emotion": EMOTIONS,
    "target_intensity": INTENSITIES,
    "split": SPLITS,
}
_DEFAULTS = {"target_intensity": DEFAULT_INTENSITY, "split": DEFAULT_SPLIT}


@functools.lru_cache(maxsize=4096)
def _vocabulary_value(name: str, given: str) -> str | None:
    """Return the stored spelling of a vocabulary value (None: not one); a file repeats a handful."""
    if not given:
        return _DEFAULTS.get(name, "")
    normalised = re.sub(r"[\s_]+", "-", given.lower())
    normalised = VALUE_ALIASES.get(name, {}).get(normalised, normalised)
    return normalised if normalised in VOCABULARY_FIELDS[name] else None
