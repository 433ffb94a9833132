"""Item files read in blocks read as if line by line: a block's edge may fall anywhere (inside a
quoted cell, a UTF-8 character, a bad line) and nothing changes."""

from __future__ import annotations

import pytest

from annotation.recording.item_import import reading
from annotation.recording.item_import.reading import parse_items

ROWS = "".join(
    f'EE-{n},"Line {n}: one, two;\nthree — quoted ""here"".",implicit,sad,{"café" if n % 3 else ""}\n'
    for n in range(1, 60)
)
CSV = ("external_id,text,scenario,target_emotion,emotion_variant\n" + ROWS).encode()


def read(data: bytes, name: str = "items.csv") -> tuple[list[tuple[object, ...]], list[str], int]:
    parsed = parse_items(data, name)
    rows = [(*row.values().values(), row.row) for row in parsed.rows]
    return rows, [str(e) for e in parsed.errors], parsed.rows_read


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 1000])
def test_any_block_size_reads_the_same_rows(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    whole = read(CSV)
    monkeypatch.setattr(reading, "BLOCK_BYTES", block)
    assert read(CSV) == whole
    assert len(whole[0]) == 59 and whole[0][0][1] == 'Line 1: one, two;\nthree — quoted "here".'


@pytest.mark.parametrize("block", [1, 5, 64, 256 * 1024])
def test_a_bad_byte_far_into_a_file_names_its_line_and_byte(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(reading, "BLOCK_BYTES", block)
    lines = b"".join(
        b'{"external_id": "J-%d", "text": "Hi.", "scenario": "implicit", "target_emotion": "sad"}\n' % n
        for n in range(1, 3001)
    )
    data = lines + b'{"external_id": "J-x", "text": "Caf\xe9"}\n' + lines

    rows, errors, _ = read(data, "items.jsonl")

    assert errors == [
        "Line 3001 is not UTF-8 text (byte 36 of the line cannot be read). Save the file as UTF-8."
    ]
    assert len(rows) == 3000  # every line before it was read


def test_a_line_too_long_in_a_later_block_names_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "BLOCK_BYTES", 4096)
    data = CSV + b"EE-999," + b"x" * reading.MAX_LINE_BYTES + b",implicit,sad\n" + CSV

    rows, errors, _ = read(data)

    assert errors == [
        "Line 120 is longer than 1024 KiB, far more than one item needs; is this an item file (one item per line)?"
    ]
    assert len(rows) == 59


def test_a_last_line_of_exactly_the_limit_is_read_and_one_byte_more_is_refused() -> None:
    header = b"external_id,text,scenario,target_emotion\n"
    start = b"EE-1,Hi.,implicit,sad"
    cells = b",x" * ((reading.MAX_LINE_BYTES - len(start)) // 2)
    at_limit = header + start + cells + b"x" * ((reading.MAX_LINE_BYTES - len(start)) % 2)
    assert read(at_limit)[1] == [f"Row 2: has {4 + len(cells) // 2} cells but the header names 4."]
    assert read(at_limit + b"\n")[1][0].startswith("Line 2 is longer than 1024 KiB")
