"""CSV cells a spreadsheet would run are neutralised; numbers stay numbers; breaks stay in their cell.

(That every writer uses it: tests/webapp/lib/test_export_writers.py.)"""

from __future__ import annotations

import csv
import io

import pytest

from webapp.lib.spreadsheet import LINE_BREAKS, NeutralDictWriter, NeutralWriter, csv_row, neutral_cell

FORMULAS = [
    '=HYPERLINK("http://x","y")',
    "+cmd|' /C calc'!A0",
    "=cmd|' /C calc'!A0",
    "=SUM(1;2)",
    "@SUM(1+1)",
    "-2+3",
    "\tx",
    "\r=1",
    "\n=1",
    "\uff1dSUM(1)",
]


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


@pytest.mark.parametrize("separator", list(LINE_BREAKS))
def test_a_line_or_record_break_stays_inside_its_quoted_cell(separator: str) -> None:
    line = csv_row(["a", f"x{separator}=SUM(1;2)", "b"])

    assert line == f'a,"x{separator}=SUM(1;2)",b\n'
    assert list(csv.reader(io.StringIO(line, newline=""))) == [["a", f"x{separator}=SUM(1;2)", "b"]]


def test_a_tsv_quotes_tabs_and_leaves_commas() -> None:
    buffer = io.StringIO()
    NeutralWriter(buffer, delimiter="\t").writerow(["a\tb", "c,d", "=1+1"])

    assert buffer.getvalue() == '"a\tb"\tc,d\t\'=1+1\n'
    assert list(csv.reader(io.StringIO(buffer.getvalue()), delimiter="\t")) == [["a\tb", "c,d", "'=1+1"]]


def test_a_dict_row_with_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValueError, match="not in fieldnames"):
        NeutralDictWriter(io.StringIO(), fieldnames=("a",)).writerow({"b": 1})
