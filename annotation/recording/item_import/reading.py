"""Read an item file (CSV or JSONL) as numbered records, in blocks: memory stays flat whatever its size.

The admin who imports a file must be able to fix it from the messages alone, so every problem
names its row (CSV: the spreadsheet row, the header being row 1; JSONL: the line) and its field.
Pure: a binary stream in, records out; nothing here touches the database.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import operator
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

from annotation.recording.item_import.rules import (
    ITEM_FIELDS,
    REQUIRED_FIELDS,
    ItemRow,
    RawRow,
    RowError,
    check_row,
    column_name,
    missing_columns,
    unknown_or_repeated_columns,
)

# Hostile or mistaken files end in a clear message, never a traceback or an unbounded read: a line
# (a CSV record's line, a JSONL object) may hold at most MAX_LINE_BYTES, a file MAX_ROWS items.
MAX_LINE_BYTES = 1024 * 1024
MAX_ROWS = 1_000_000
DELIMITERS = (",", "\t", ";")
# Read this much at a time and decode it at once: a line at a time cost a third of an import.
# Below MAX_LINE_BYTES, so only a block that carries a long unfinished line over needs its lines measured.
BLOCK_BYTES = 256 * 1024

Format = Literal["csv", "jsonl"]
RecordStream = Iterator[tuple[int, "RawRow | RowError"]]


class FileProblem(ValueError):
    """The file as a whole cannot be read as items (the message says why, for the person importing)."""


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


def read_records(stream: BinaryIO, filename: str) -> tuple[Format, RecordStream]:
    """Return the file's format and its records, read in blocks (never the whole file at once).

    Each record is (row number, its raw values in ITEM_FIELDS order) or (row number, RowError);
    a problem with the file as a whole comes as row 0 and ends the stream.
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
        rows_read += number != 0  # an unparseable line is a row read too, as in the import
        if isinstance(record, RowError):
            errors.append(record)
            continue
        row, row_errors = check_row(number, dict(zip(ITEM_FIELDS, record, strict=True)), row_label)
        errors.extend(row_errors)
        if row is not None:
            rows.append(row)
    if rows_read == 0 and not errors:
        errors.append(RowError(0, "", "The file holds no items."))
    return ParsedItems(file_format, rows=rows, errors=errors, rows_read=rows_read)


def text_lines(stream: BinaryIO, first: bytes | None = None) -> Iterator[str]:
    """Yield a file's lines as text (`first`: its first line, when already read), past a UTF-8 BOM;
    raise FileProblem for UTF-16, a line longer than MAX_LINE_BYTES, or bytes that are not UTF-8
    (after yielding every line before it). The reading rules of every line-based import (items,
    gold JSONL). Lines end at "\\n" only, as `readline` ends them."""
    return itertools.chain.from_iterable(_text_blocks(stream, first))


def _text_blocks(stream: BinaryIO, first: bytes | None) -> Iterator[Iterable[str]]:
    if first is None:
        first = stream.readline(MAX_LINE_BYTES + 1)
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FileProblem("The file is UTF-16 text; save it as UTF-8 (in Excel: CSV UTF-8).")
    first = first.removeprefix(b"\xef\xbb\xbf")
    if not first:
        return
    if len(first) > MAX_LINE_BYTES:
        raise _too_long(1)
    yield [_decoded(first, 1)]
    number, rest = 2, b""  # the number of the next line, and the start of it read so far
    while True:
        block = stream.read(BLOCK_BYTES)
        data = rest + block if rest else block
        end = len(data) if not block else data.rfind(b"\n") + 1  # the end of the last whole line
        whole, rest = data[:end], data[end:]
        if whole:
            text, problem = _checked_text(whole, number)
            # newline="\n": split at "\n" alone and keep it, which the csv reader needs inside quotes.
            yield io.StringIO(text, newline="\n")
            if problem is not None:
                raise problem
            number += whole.count(b"\n")
        if len(rest) > MAX_LINE_BYTES:
            raise _too_long(number)
        if not block:
            return


def _checked_text(data: bytes, number: int) -> tuple[str, FileProblem | None]:
    """Return the lines of `data` (starting at line `number`) as text, up to the first line that is
    too long or not UTF-8, and that line's problem."""
    cut, problem = len(data), None
    if len(data) >= MAX_LINE_BYTES:  # smaller blocks cannot hold a line that is too long
        start = 0
        for index, line in enumerate(data.split(b"\n")):
            # A line ends with its "\n", which counts, as in readline(MAX_LINE_BYTES + 1).
            if len(line) + (start + len(line) < len(data)) > MAX_LINE_BYTES:
                cut, problem = start, _too_long(number + index)
                break
            start += len(line) + 1
    try:
        return data[:cut].decode("utf-8"), problem
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        line_number = number + data.count(b"\n", 0, error.start)
        return data[:line_start].decode("utf-8"), FileProblem(
            f"Line {line_number} is not UTF-8 text (byte {error.start - line_start + 1} of the line cannot be read). "
            "Save the file as UTF-8."
        )


def _decoded(line: bytes, number: int) -> str:
    text, problem = _checked_text(line, number)
    if problem is not None:
        raise problem
    return text


def _too_long(number: int) -> FileProblem:
    return FileProblem(
        f"Line {number} is longer than {MAX_LINE_BYTES // 1024} KiB, far more than one item needs; "
        "is this an item file (one item per line)?"
    )


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
    columns = [column_name(name) for name in next(reader)]
    problem = unknown_or_repeated_columns(columns) or missing_columns(columns)
    if problem:
        yield 0, RowError(0, "", problem)
        return
    width = len(columns)
    required = sum(1 for name in columns if name in REQUIRED_FIELDS)
    # A row's values in ITEM_FIELDS order: a field the header lacks, or a cell past a short row's
    # end, reads as the empty cell each row gets appended.
    pick = operator.itemgetter(*(columns.index(name) if name in columns else width for name in ITEM_FIELDS))
    padding = [""] * (width + 1)
    # Row numbers follow the spreadsheet: the header is row 1, so the first item is row 2.
    for number, cells in enumerate(reader, start=2):
        count = len(cells)
        if not (count and (cells[0].strip() or "".join(cells).strip())):
            continue
        if count > width:
            yield number, RowError(number, "", f"has {count} cells but the header names {width}.")
            continue
        if count < required and (other := _other_delimiter(delimiter.join(cells), delimiter)):
            message = (
                f"is separated by {other!r} but the header by {delimiter!r}; use one separator throughout."
            )
            yield number, RowError(number, "", message)
            continue
        cells.extend(padding[count:])
        yield number, pick(cells)


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
        renamed = {column_name(str(key)): item for key, item in value.items()}
        # A line may leave out optional keys; missing required ones are reported per field.
        problem = unknown_or_repeated_columns(list(renamed))
        if problem:
            yield number, RowError(number, "", problem, "line")
            continue
        yield number, tuple(renamed.get(name, "") for name in ITEM_FIELDS)  # absent reads as empty
