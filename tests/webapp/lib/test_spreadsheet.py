"""CSV cells a spreadsheet would run are neutralised; numbers stay numbers; every writer uses it."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from webapp.lib.spreadsheet import NeutralDictWriter, NeutralWriter, neutral_cell

ROOT = Path(__file__).resolve().parents[3]
FORMULAS = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "\tx", "\r=1"]


@pytest.mark.parametrize("formula", FORMULAS)
def test_formula_like_text_is_written_after_a_quote(formula: str) -> None:
    assert neutral_cell(formula) == "'" + formula


@pytest.mark.parametrize("number", ["-0.2500", "-2", "+3", "1e-05", "-1.5E+3", "-.5", "7.4000", "0"])
def test_numbers_stay_numbers(number: str) -> None:
    assert neutral_cell(number) == number


@pytest.mark.parametrize("value", ["A", "SecretSystemA", "naturalness", "", "a=b", "x-1", 3, -2.5, None])
def test_other_cells_are_left_alone(value: object) -> None:
    assert neutral_cell(value) == value


def test_writers_neutralise_every_cell_and_keep_csv_quoting() -> None:
    buffer = io.StringIO()
    NeutralWriter(buffer).writerow(['=HYPERLINK("http://x","y")', "-0.5", 'a,"b"'])
    dict_buffer = io.StringIO()
    writer = NeutralDictWriter(dict_buffer, fieldnames=("system", "estimate", "n"), restval="")
    writer.writeheader()
    writer.writerow({"system": "@SUM(1+1)", "estimate": "-1.2500"})
    assert list(csv.reader(io.StringIO(buffer.getvalue()))) == [
        ['\'=HYPERLINK("http://x","y")', "-0.5", 'a,"b"']
    ]
    assert list(csv.DictReader(io.StringIO(dict_buffer.getvalue()))) == [
        {"system": "'@SUM(1+1)", "estimate": "-1.2500", "n": ""}
    ]


def test_no_module_writes_csv_around_the_helper() -> None:
    writers = re.compile(r"csv\.(writer|DictWriter)\(|\.to_csv\(")
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("annotation", "evaluation", "ml", "webapp")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "spreadsheet.py" and writers.search(path.read_text())
    ]
    assert offenders == []
