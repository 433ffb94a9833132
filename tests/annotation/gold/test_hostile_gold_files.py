"""Hostile or mistaken gold files end in a clear message with nothing imported, never a traceback."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest

from annotation.gold import importing
from annotation.gold.importing import GoldImportError, import_gold
from annotation.gold.models import GoldReference
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.recording.item_import import MAX_LINE_BYTES
from annotation.recording.models import Item
from tests.annotation.labelling.support import SCRIPT, perception, tom
from webapp.jobs import run_job
from webapp.models import JobStatus


def gold_row(**overrides: Any) -> dict[str, Any]:
    row = {
        "id": "EE-9",
        "text": SCRIPT,
        "scenario": "modality-conflict",
        "target_emotion": "angry",
        "target_intensity": "medium",
        "split": "test",
        "perception": perception(),
        "tom": tom(),
        "annotations": [],
    }
    row.update(overrides)
    return row


def problems_of(path: Path, users: dict[str, Any]) -> list[str]:
    with pytest.raises(GoldImportError) as raised:
        import_gold(path, imported_by=users["admin"])
    assert not Item.objects.exists() and not GoldReference.objects.exists()
    return [str(problem) for problem in raised.value.problems]


def write(tmp_path: Path, data: bytes, name: str = "gold.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_good_row_behind_a_utf8_bom_imports(users, tmp_path) -> None:
    path = write(tmp_path, b"\xef\xbb\xbf" + json.dumps(gold_row()).encode() + b"\n")
    assert import_gold(path, imported_by=users["admin"]).gold_created == 1


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (json.dumps(gold_row(text="Café"), ensure_ascii=False).encode("latin-1"), "Line 1 is not UTF-8 text"),
        (json.dumps(gold_row()).encode("utf-16"), "The file is UTF-16 text"),
        (b'{"id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "row 1, line: nested too deeply"),
        (b'{"id": "' + b"x" * MAX_LINE_BYTES + b'"}', "Line 1 is longer than 1024 KiB"),
        (b"\x89PNG\r\n\x1a\n", "Line 1 is not UTF-8 text"),
    ],
    ids=["latin-1", "utf-16", "nested", "long line", "binary"],
)
def test_unreadable_files_name_the_problem(users, tmp_path, data: bytes, expected: str) -> None:
    assert problems_of(write(tmp_path, data), users)[0].startswith(expected)


def test_nul_characters_and_wrong_types_are_row_problems(users, tmp_path) -> None:
    rows = [
        gold_row(id="EE-1", perception=perception(situation="A\u0000B")),
        gold_row(id="EE-2", annotations=[{"annotator": ["ana"]}], gold_version="two"),
        gold_row(id="EE-3", adjudicated_at="2024-13-45T00:00:00", reference_response={"x": 1}),
        gold_row(id="E" * 100, audio=42),
    ]
    path = write(tmp_path, b"\n".join(json.dumps(row).encode() for row in rows[:3]))
    assert problems_of(path, users) == [
        "row 1, row: holds a NUL character (\\0), which cannot be stored",
        "row 2, gold_version: must be a number, 0 or more",
        "row 2, annotations[1].annotator: missing",
        "row 3, reference_response: must be text",
        "row 3, adjudicated_at: is not a date and time (ISO 8601)",
    ]
    assert problems_of(write(tmp_path, json.dumps(rows[3]).encode()), users) == [
        "row 1, audio: must name an audio file beside the JSONL"
    ]
    too_long = write(tmp_path, json.dumps({**rows[3], "audio": None}).encode())
    assert problems_of(too_long, users)[0].startswith("row 1, id: '" + "E" * 80 + "…' is not a usable id")


def test_more_rows_than_the_cap_are_refused(users, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(importing, "MAX_ROWS", 2)
    rows = [json.dumps(gold_row(id=f"EE-{n}")).encode() for n in range(3)]
    assert problems_of(write(tmp_path, b"\n".join(rows)), users) == [
        "The file holds more than 2 rows; split it."
    ]


def test_a_file_that_is_not_parquet_is_refused(users, tmp_path) -> None:
    problems = problems_of(write(tmp_path, b"PAR1 not really", "gold.parquet"), users)
    assert problems[0].startswith("gold.parquet is not a readable parquet file")


def zip_of(*members: tuple[zipfile.ZipInfo | str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for info, data in members:
            zipped.writestr(info, data)
    return buffer.getvalue()


def link(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


@pytest.mark.parametrize(
    ("archive", "expected"),
    [
        (b"not a zip at all", "the upload is not a readable zip archive"),
        (zip_of(("../evil.jsonl", b"{}")), "points outside the export folder"),
        (zip_of((link("gold.jsonl"), b"/etc/passwd")), "is a link"),
        (zip_of(("gold.jsonl", b"{}"), ("GOLD.jsonl", b"{}")), "appears twice"),
        (zip_of(("gold.jsonl", b"0" * 5000)), "unpacks to 5,000 bytes; at most 4,096 bytes"),
    ],
    ids=["not a zip", "traversal", "symlink", "duplicate", "bomb"],
)
def test_hostile_archives_fail_the_job_with_a_clear_error(
    users, media_root, settings, django_capture_on_commit_callbacks, archive: bytes, expected: str
) -> None:
    settings.GOLD_IMPORT_MAX_BYTES = 4096
    with django_capture_on_commit_callbacks(execute=False):
        job = transfer_jobs.start_import(started_by=users["admin"], name="export.zip", data=archive)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and expected in job.error, job.error
    assert not Item.objects.exists()
