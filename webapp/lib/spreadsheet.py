"""CSV and TSV the app writes: every cell neutral, whatever program opens the file (CSV injection).

Every CSV or TSV writer in the app is a ``NeutralWriter`` or ``NeutralDictWriter`` (a test fails on
any other ``csv.writer``, and the export sweep reads every export route back): names and free text
come from people (systems, judges, studies, dimensions) and a lab opens the file in a spreadsheet,
where ``=HYPERLINK(...)``, ``+cmd|...``, ``@SUM(...)`` or ``-2+3`` run.

Two rules, one per cell:

- A text cell that starts like a formula (``=``, ``+``, ``-``, ``@``, their full-width forms, a
  tab, a carriage return or a line feed) is written after a single quote (OWASP's advice;
  spreadsheets show the text and hide the quote). A cell that is a number stays a number, so
  negative estimates (``-0.2500``) and signed counts keep their meaning: numbers the code
  formats, and a name that is nothing but a number (``-2``), which a spreadsheet reads as that
  number and never runs.
- A cell holding the delimiter, a quote, or anything some reader takes for the end of a line or
  record (CR, LF, ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, U+2028, U+2029: the breaks of
  Python's ``str.splitlines`` and of Unicode) is quoted, so it stays inside its cell and its row.
  ``csv.writer`` quotes only the delimiter, the quote and CR/LF, which let a system name holding
  U+2028 or ``\\x1e`` split a row in two for any reader that splits lines the Unicode way.

The output reads back with ``csv.reader`` cell for cell. Pure: no Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TextIO

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
# Every character str.splitlines() breaks a line at: a cell holding one is quoted.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
# A plain decimal number (optionally signed, with a fraction or exponent): never a formula.
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def neutral_cell(value: object) -> object:
    """Return the value as it may be written: formula-like text after a quote, anything else as is."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    if _NUMBER.fullmatch(value):
        return value
    return "'" + value


def csv_field(value: object, delimiter: str = ",") -> str:
    """Return one cell as written: neutral, and quoted when it holds the delimiter, a quote or a
    line or record break (None is an empty cell, as with ``csv.writer``)."""
    neutral = neutral_cell(value)
    text = "" if neutral is None else str(neutral)
    if any(char in text for char in (delimiter, '"', *LINE_BREAKS)):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_row(values: Iterable[object], delimiter: str = ",") -> str:
    """Return one row as written, with its line ending."""
    return delimiter.join(csv_field(value, delimiter) for value in values) + "\n"


class NeutralWriter:
    """A ``csv.writer`` lookalike whose every cell is a ``csv_field``; ``delimiter="\\t"`` for TSV."""

    def __init__(self, stream: TextIO, delimiter: str = ",") -> None:
        self._stream = stream
        self._delimiter = delimiter

    def writerow(self, row: Iterable[object]) -> None:
        self._stream.write(csv_row(row, self._delimiter))


class NeutralDictWriter:
    """A ``csv.DictWriter`` lookalike whose every cell (and header) is a ``csv_field``."""

    def __init__(
        self, stream: TextIO, fieldnames: Sequence[str], restval: object = "", delimiter: str = ","
    ) -> None:
        self.fieldnames = list(fieldnames)
        self._writer = NeutralWriter(stream, delimiter)
        self._restval = restval

    def writeheader(self) -> None:
        self._writer.writerow(self.fieldnames)

    def writerow(self, row: Mapping[str, object]) -> None:
        unknown = set(row) - set(self.fieldnames)
        if unknown:
            raise ValueError(f"dict contains fields not in fieldnames: {sorted(unknown)}")
        self._writer.writerow(row.get(name, self._restval) for name in self.fieldnames)
