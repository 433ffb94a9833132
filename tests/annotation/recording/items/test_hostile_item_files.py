"""Hostile or mistaken item files end in a clear message, nothing half-imported, memory bounded."""

from __future__ import annotations

import io
import json

import pytest

from annotation.recording import item_import
from annotation.recording.items import import_items
from annotation.recording.models import Item

HEADER = b"external_id,text,scenario,target_emotion\n"
GOOD = b"EE-1,Hello there.,implicit,sad\n"
GOOD_JSON = {"external_id": "J-1", "text": "Hello there.", "scenario": "implicit", "target_emotion": "sad"}

pytestmark = pytest.mark.django_db


def messages(data: bytes, name: str = "items.csv") -> list[str]:
    report = import_items(data, name)
    assert not report.imported
    assert not Item.objects.exists()  # nothing half-imported
    return [str(error) for error in report.errors]


def test_a_latin1_file_names_the_line_and_asks_for_utf8() -> None:
    data = HEADER + GOOD + "EE-2,Café au lait.,implicit,happy\n".encode("latin-1")
    assert messages(data) == [
        "Line 3 is not UTF-8 text (byte 9 of the line cannot be read). Save the file as UTF-8."
    ]


def test_utf16_files_with_or_without_a_bom_are_named_as_such() -> None:
    text = (HEADER + GOOD).decode()
    assert messages(text.encode("utf-16")) == [
        "The file is UTF-16 text; save it as UTF-8 (in Excel: CSV UTF-8)."
    ]
    assert messages(text.encode("utf-16-le")) == [
        "The file holds NUL bytes: it is UTF-16 or not text. Save it as UTF-8 text."
    ]


def test_a_nul_byte_in_a_cell_or_a_json_string_is_a_row_problem() -> None:
    assert messages(HEADER + GOOD + b"EE-2,Hel\x00lo.,implicit,sad\n") == [
        "Row 3, text: holds a NUL character (\\0); is the file UTF-16 or binary?"
    ]
    line = json.dumps({**GOOD_JSON, "external_id": "J-2", "text": "Hel\u0000lo"}).encode()
    assert messages(json.dumps(GOOD_JSON).encode() + b"\n" + line, "items.jsonl") == [
        "Line 2, text: holds a NUL character (\\0); is the file UTF-16 or binary?"
    ]


def test_a_utf8_bom_is_read_past_and_semicolons_or_tabs_work_throughout() -> None:
    for data in (
        b"\xef\xbb\xbf" + HEADER + GOOD,
        (HEADER + GOOD).replace(b",", b";"),
        (HEADER + GOOD).replace(b",", b"\t"),
    ):
        report = import_items(data, "items.csv")
        assert report.imported and report.errors == [], data
        Item.objects.all().delete()


def test_mixed_separators_are_named() -> None:
    data = HEADER + GOOD + b"EE-2;Hello again.;implicit;sad\n"
    assert messages(data) == [
        "Row 3: is separated by ';' but the header by ','; use one separator throughout."
    ]


class EndlessLine(io.RawIOBase):
    """A file whose first line never ends (a 1 GB line, or /dev/zero renamed .csv), read lazily."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        buffer[: len(buffer)] = b"a" * len(buffer)
        self.served += len(buffer)
        return len(buffer)


def test_a_gigabyte_line_is_refused_after_reading_one_mebibyte() -> None:
    endless = EndlessLine()
    stream = io.BufferedReader(endless)
    report = import_items(stream, "items.csv")
    assert [str(error) for error in report.errors] == [
        "Line 1 is longer than 1024 KiB, far more than one item needs; is this an item file (one item per line)?"
    ]
    assert endless.served < 2 * item_import.MAX_LINE_BYTES


def test_a_long_line_after_good_ones_is_refused_too() -> None:
    data = HEADER + GOOD + b"EE-2," + b"x" * item_import.MAX_LINE_BYTES + b",implicit,sad\n"
    assert messages(data)[0].startswith("Line 3 is longer than 1024 KiB")


def test_more_rows_than_the_cap_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(item_import.reading, "MAX_ROWS", 100)
    rows = b"".join(b"EE-%d,Hi.,implicit,sad\n" % n for n in range(101))
    assert messages(HEADER + rows)[-1] == "The file holds more than 100 items; split it."


def test_deeply_nested_or_absurd_json_is_a_line_problem() -> None:
    nested = b'{"external_id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    huge_number = b'{"external_id": ' + b"9" * 5000 + b"}"
    data = json.dumps(GOOD_JSON).encode() + b"\n" + nested + b"\n" + huge_number + b"\n"
    problems = messages(data, "items.jsonl")
    assert problems[0] == "Line 2: is nested too deeply to be an item."
    assert problems[1].startswith("Line 3: is not valid JSON (Exceeds the limit")


def test_binary_garbage_is_a_clear_refusal() -> None:
    assert messages(bytes(range(256)) * 4, "items.csv")[0].startswith("The file holds NUL bytes")
    assert messages(b"\x89PNG\r\n\x1a\n\x00\x00", "items.jsonl")[0].startswith("Line 1 is not UTF-8 text")


def test_an_empty_file_or_a_header_alone_holds_no_items() -> None:
    assert messages(b"") == ["The file holds no items."]
    assert messages(HEADER) == ["The file holds no items."]
