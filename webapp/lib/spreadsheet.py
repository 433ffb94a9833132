"""CSV the app writes, with no cell a spreadsheet would run as a formula (CSV injection).

Every CSV writer in the app is a ``NeutralWriter`` or ``NeutralDictWriter`` (a test fails on any
other ``csv.writer``): names come from people (systems, studies, dimensions) and a lab opens the
file in a spreadsheet, where ``=HYPERLINK(...)``, ``+cmd|...``, ``@SUM(...)`` or ``-2+3`` run.

A text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written
after a single quote (OWASP's advice; spreadsheets show the text and hide the quote). A cell that
is a number stays a number, so negative estimates (``-0.2500``) and signed counts keep their
meaning: numbers the code formats, and a name that is nothing but a number (``-2``), which a
spreadsheet reads as that number and never runs. Pure: no Django.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A plain decimal number (optionally signed, with a fraction or exponent): never a formula.
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def neutral_cell(value: object) -> object:
    """Return the value as it may be written: formula-like text after a quote, anything else as is."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    if _NUMBER.fullmatch(value):
        return value
    return "'" + value


class NeutralWriter:
    """``csv.writer`` whose every cell passes through ``neutral_cell``."""

    def __init__(self, stream: TextIO, **options: Any) -> None:
        self._writer = csv.writer(stream, lineterminator="\n", **options)

    def writerow(self, row: Iterable[object]) -> None:
        self._writer.writerow([neutral_cell(value) for value in row])


class NeutralDictWriter:
    """``csv.DictWriter`` whose every cell (and header) passes through ``neutral_cell``."""

    def __init__(self, stream: TextIO, fieldnames: Sequence[str], **options: Any) -> None:
        self._writer = csv.DictWriter(stream, fieldnames=fieldnames, lineterminator="\n", **options)

    def writeheader(self) -> None:
        self._writer.writerow({name: neutral_cell(name) for name in self._writer.fieldnames})

    def writerow(self, row: Mapping[str, object]) -> None:
        self._writer.writerow({key: neutral_cell(value) for key, value in row.items()})
