"""Hostile output imports: a corpus of bad archives, bucket listings and JSONL, generated here.

Each is refused with a message an admin can act on, never a traceback, and leaves nothing behind:
no output row and no stored file.
"""

from __future__ import annotations

import io
import json
import stat
import struct
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from django.urls import reverse

from evaluation.outputs.audio_sources import (
    AudioSourceRefused,
    DirectoryAudioSource,
    S3AudioSource,
    ZipAudioSource,
)
from evaluation.outputs.importing import import_outputs
from evaluation.outputs.models import ModelOutput, System
from evaluation.outputs.parsing import parse_rows
from tests.evaluation.judging_support import BenchmarkItemFactory, jsonl, zip_of
from tests.factories import tiny_wav
from tests.support.s3_server import S3Server
from webapp.lib.stored_text import needs_escape, unescape

ROWS = jsonl({"item_id": "EE-1", "response": "I hear you."})


@pytest.fixture
def system(db: None, media_root: Path) -> System:
    BenchmarkItemFactory.create(external_id="EE-1")
    return System.objects.create(name="Hostile", category=System.Category.OMNI)


def _stored_files(media_root: Path) -> list[Path]:
    return [path for path in media_root.rglob("*") if path.is_file()]


def _zip_with(*entries: tuple[zipfile.ZipInfo | str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names it is asked to write
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for info, data in entries:
                archive.writestr(info, data)
    return buffer.getvalue()


def _symlink(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def _patched(data: bytes, local_offset: int, central_offset: int, value: int, width: str = "<I") -> bytes:
    """Return `data` with one field of the first local header and central directory entry replaced."""
    patched = bytearray(data)
    struct.pack_into(width, patched, patched.find(b"PK\x03\x04") + local_offset, value)
    struct.pack_into(width, patched, patched.find(b"PK\x01\x02") + central_offset, value)
    return bytes(patched)


def _encrypted() -> bytes:
    """A zip whose one entry is flagged as encrypted (zipfile will not write one itself)."""
    return _patched(_zip_with(("EE-1.wav", tiny_wav())), 6, 8, 0x1, "<H")


def _nul_in_name() -> bytes:
    """A zip whose entry name holds a NUL byte (zipfile truncates such names when writing)."""
    return _zip_with(("EE-1.wav#.txt", tiny_wav())).replace(b"EE-1.wav#.txt", b"EE-1.wav\x00.txt")


def _lying_sizes(declared: int) -> bytes:
    """A zip whose one entry says it holds `declared` bytes but inflates to 5 MB of zeros."""
    return _patched(_zip_with(("EE-1.wav", b"\x00" * 5 * 1024 * 1024)), 22, 24, declared)


HOSTILE_ZIPS: dict[str, tuple[Callable[[], bytes], str]] = {
    "text, not a zip": (
        lambda: b"EE-1.wav\nthis is a list of files, not an archive\n" * 10,
        "not a readable zip",
    ),
    "zip cut in half": (lambda: zip_of({"EE-1.wav": tiny_wav(1.0)})[:300], "not a readable zip"),
    "empty bytes": (lambda: b"", "not a readable zip"),
    "path traversal": (lambda: _zip_with(("../../EE-1.wav", tiny_wav())), "climbs out of its folder"),
    "traversal inside": (lambda: _zip_with(("clips/../../EE-1.wav", tiny_wav())), "climbs out of its folder"),
    "backslash traversal": (lambda: _zip_with(("clips\\..\\..\\EE-1.wav", tiny_wav())), "climbs out"),
    "absolute path": (lambda: _zip_with(("/etc/EE-1.wav", tiny_wav())), "an absolute path"),
    "windows drive": (lambda: _zip_with(("C:/evil/EE-1.wav", tiny_wav())), "an absolute path"),
    "NUL in a name": (_nul_in_name, "NUL or control character"),
    "symlink": (lambda: _zip_with(_symlink("EE-1.wav", "/etc/passwd")), "symbolic link"),
    "duplicate names": (lambda: _zip_with(("EE-1.wav", tiny_wav()), ("EE-1.wav", b"other")), "twice"),
    "duplicate after ./": (
        lambda: _zip_with(("a/EE-1.wav", tiny_wav()), ("a/./EE-1.wav", tiny_wav())),
        "twice",
    ),
    "encrypted entry": (_encrypted, "encrypted"),
    "too many files": (lambda: _zip_with(*((f"f{n}.wav", b"") for n in range(6))), "at most 5 are accepted"),
    "declared bomb": (lambda: _zip_with(("EE-1.wav", b"\x00" * 3 * 1024 * 1024)), "expands to 3 MB"),
}


@pytest.mark.parametrize("case", list(HOSTILE_ZIPS))
def test_hostile_zips_are_refused_before_anything_is_read(case: str, settings) -> None:
    settings.OUTPUT_IMPORT_MAX_FILES = 5
    settings.OUTPUT_IMPORT_MAX_BYTES = 2 * 1024 * 1024
    make, message = HOSTILE_ZIPS[case]
    with pytest.raises(AudioSourceRefused, match=message):
        ZipAudioSource(io.BytesIO(make()))


def test_sizes_that_lie_are_caught_while_reading(system: System, settings, media_root: Path) -> None:
    settings.UPLOAD_MAX_BYTES = 1024 * 1024
    source = ZipAudioSource(io.BytesIO(_lying_sizes(declared=1000)))  # the listing looks harmless
    report = import_outputs(system, "echoeval-v1", ROWS, source)
    assert not report.imported
    assert [problem.message for problem in report.errors] == [report.errors[0].message] and report.errors[
        0
    ].message.startswith("audio EE-1.wav cannot be read: damaged in the zip")
    assert not ModelOutput.objects.exists() and _stored_files(media_root) == []


def test_the_total_budget_stops_a_source_that_delivers_more_than_it_listed(
    system: System, settings, s3_server: S3Server, media_root: Path
) -> None:
    client = s3_server.client()
    client.create_bucket(Bucket="hostile-grown")
    client.put_object(Bucket="hostile-grown", Key="lab/EE-1.wav", Body=tiny_wav())
    source = S3AudioSource("s3://hostile-grown/lab/")
    # The object grows after it was listed: only the bytes that arrive count.
    client.put_object(Bucket="hostile-grown", Key="lab/EE-1.wav", Body=b"RIFF" + b"\x00" * 3 * 1024 * 1024)
    settings.UPLOAD_MAX_BYTES = 2 * 1024 * 1024
    report = import_outputs(system, "echoeval-v1", ROWS, source)
    assert not report.imported
    assert "too large (over 2 MB)" in str(report.errors[0])
    assert not ModelOutput.objects.exists() and _stored_files(media_root) == []


def test_audio_files_that_are_not_audio_block_the_whole_import(system: System, media_root: Path) -> None:
    BenchmarkItemFactory.create(external_id="EE-2")
    rows = jsonl({"item_id": "EE-1", "response": "a"}, {"item_id": "EE-2", "response": "b"})
    fake_wav = b"RIFF\x24\x00\x00\x00WAVEthis is not a wave file at all" * 4
    report = import_outputs(
        system,
        "echoeval-v1",
        rows,
        ZipAudioSource(io.BytesIO(zip_of({"EE-1.wav": tiny_wav(), "EE-2.wav": fake_wav}))),
    )
    assert not report.imported
    assert [str(problem) for problem in report.errors] == [
        "line 2 (EE-2): audio EE-2.wav could not be decoded as WAV audio"
    ]
    # EE-1's clean copy was stored while validating and removed again.
    assert not ModelOutput.objects.exists() and _stored_files(media_root) == []


def test_s3_listings_with_hostile_names_or_too_many_keys_are_refused(
    db: None, settings, s3_server: S3Server
) -> None:
    client = s3_server.client()
    client.create_bucket(Bucket="hostile-names")
    client.put_object(Bucket="hostile-names", Key="lab/../EE-1.wav", Body=tiny_wav())
    with pytest.raises(AudioSourceRefused, match="climbs out of its folder"):
        S3AudioSource("s3://hostile-names/lab/")
    for n in range(4):
        client.put_object(Bucket="hostile-names", Key=f"many/f{n}.wav", Body=tiny_wav())
    settings.OUTPUT_IMPORT_MAX_FILES = 3
    with pytest.raises(AudioSourceRefused, match="at most 3 are accepted"):
        S3AudioSource("s3://hostile-names/many/")


def test_a_folder_with_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "EE-1.wav").symlink_to("/etc/passwd")
    with pytest.raises(AudioSourceRefused, match="symbolic link"):
        DirectoryAudioSource(tmp_path)


HOSTILE_LINES: dict[str, tuple[bytes, str]] = {
    "NUL byte": (b'{"item_id": "EE-1", "response": "hi\x00there"}', "a raw NUL byte; write it as \\u0000"),
    "deep nesting": (
        b'{"item_id": "EE-1", "response": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "levels deep",
    ),
    "nested too deep for storage": (
        b'{"item_id": "EE-1", "reasoning": {"context": ' + b"[" * 30 + b"]" * 30 + b'}, "response": "r"}',
        "nested more than 16 levels deep",
    ),
    "audio climbing out": (
        b'{"item_id": "EE-1", "response": "r", "audio": "../../etc/passwd"}',
        "climbs out",
    ),
    "absolute audio": (b'{"item_id": "EE-1", "response": "r", "audio": "/etc/passwd"}', "absolute path"),
    "not UTF-8": (b'{"item_id": "EE-1", "response": "\xff\xfe"}', "not UTF-8"),
}


@pytest.mark.parametrize("case", list(HOSTILE_LINES))
def test_hostile_jsonl_lines_are_problems_not_tracebacks(case: str) -> None:
    data, message = HOSTILE_LINES[case]
    rows, problems = parse_rows(data)
    assert rows == []
    assert len(problems) == 1 and message in problems[0].message, problems


def test_text_a_database_refuses_is_escaped_reversibly_and_flagged_not_refused() -> None:
    # given rows whose text holds an escaped NUL (in a value and in a key) and a lone surrogate
    data = (
        b'{"item_id": "EE-1", "response": "hi\\u0000there"}\n'
        b'{"item_id": "EE-2", "reasoning": {"a\\u0000": "x"}, "response": "r"}\n'
        b'{"item_id": "EE-3", "output": "<think><perception>\\ud800</perception></think>ok"}'
    )
    # when they are parsed
    rows, problems = parse_rows(data)
    # then each is a row, its text escaped (never holding a NUL or a surrogate) and flagged
    assert problems == []
    assert [row.escaped_characters for row in rows] == [
        "1 NUL character",
        "1 NUL character",
        "1 lone surrogate",
    ]
    assert unescape(rows[0].response_text) == "hi\x00there"
    assert [unescape(key) for key in rows[1].reasoning_fields] == ["a\x00"]
    assert unescape(rows[2].perception_text) == "\ud800"
    stored = json.dumps([row.content() for row in rows], ensure_ascii=False)
    assert not needs_escape(stored) and stored.encode("utf-8")


def test_hostile_jsonl_imports_nothing(system: System, media_root: Path) -> None:
    rows = HOSTILE_LINES["deep nesting"][0] + b"\n" + jsonl({"item_id": "EE-1", "response": "fine"})
    report = import_outputs(
        system, "echoeval-v1", rows, ZipAudioSource(io.BytesIO(zip_of({"EE-1.wav": tiny_wav()})))
    )
    assert not report.imported and "line 1" in str(report.errors[0])
    assert not ModelOutput.objects.exists() and _stored_files(media_root) == []


def test_the_import_page_says_what_is_wrong_with_a_file_that_is_not_a_zip(
    system: System, client_for, media_root: Path
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client_for("admin").post(
        reverse("evaluation:output_import", args=[system.pk]),
        {
            "benchmark_version": "echoeval-v1",
            "rows": SimpleUploadedFile("rows.jsonl", ROWS),
            "audio_zip": SimpleUploadedFile("audio.zip", b"definitely not a zip"),
        },
    )
    assert response.status_code == 200
    assert "The audio upload is not a readable zip archive" in response.content.decode()
    assert not ModelOutput.objects.exists() and _stored_files(media_root) == []


def test_an_object_gone_from_the_bucket_is_a_row_problem(
    system: System, s3_server: S3Server, media_root: Path
) -> None:
    client = s3_server.client()
    client.create_bucket(Bucket="hostile-gone")
    client.put_object(Bucket="hostile-gone", Key="lab/EE-1.wav", Body=tiny_wav())
    source = S3AudioSource("s3://hostile-gone/lab/")
    client.delete_object(Bucket="hostile-gone", Key="lab/EE-1.wav")
    report = import_outputs(system, "echoeval-v1", ROWS, source)
    assert not report.imported
    assert "audio EE-1.wav cannot be read: not readable from the bucket" in str(report.errors[0])
    assert not ModelOutput.objects.exists() and _stored_files(media_root) == []


def test_an_oversized_outputs_file_is_refused_by_the_form(system: System, client_for, monkeypatch) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from evaluation.outputs import forms

    monkeypatch.setattr(forms, "MAX_ROWS_BYTES", 1024 * 1024)
    response = client_for("admin").post(
        reverse("evaluation:output_import", args=[system.pk]),
        {
            "benchmark_version": "echoeval-v1",
            "rows": SimpleUploadedFile("rows.jsonl", b"{}\n" * 700_000),
        },
    )
    assert response.status_code == 200
    assert "The outputs file is 2 MB; at most 1 MB are accepted." in response.content.decode()
    assert not ModelOutput.objects.exists()


def test_the_import_command_refuses_a_hostile_zip_with_a_message(system: System, tmp_path: Path) -> None:
    from django.core.management import CommandError, call_command

    rows, archive = tmp_path / "rows.jsonl", tmp_path / "audio.zip"
    rows.write_bytes(ROWS)
    archive.write_bytes(_zip_with(("../../EE-1.wav", tiny_wav())))
    with pytest.raises(CommandError, match="climbs out of its folder"):
        call_command("import_outputs", system.name, str(rows), "--audio", str(archive))
    assert not ModelOutput.objects.exists()
