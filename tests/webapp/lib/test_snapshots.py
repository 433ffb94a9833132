"""The snapshot format's checks, without Django: sealed manifests, member names, checked reads."""

from __future__ import annotations

import datetime
import hashlib
from pathlib import Path

import pytest

from webapp.lib.snapshots import (
    FORMAT,
    BadSnapshot,
    FolderTarget,
    Written,
    checked,
    lines,
    safe_member,
    sealed,
    snapshot_name,
    unsealed,
)


def test_a_sealed_manifest_reads_back_and_an_edit_is_caught() -> None:
    body = {"format": FORMAT, "tables": [{"rows": 3}]}
    assert unsealed(sealed(body)) == body
    with pytest.raises(BadSnapshot, match="its own checksum"):
        unsealed(sealed(body).replace(b'"rows": 3', b'"rows": 4'))
    with pytest.raises(BadSnapshot, match="not valid JSON"):
        unsealed(sealed(body)[:-10])


def test_member_names_cannot_leave_the_snapshot() -> None:
    assert safe_member("media/audio/take/a.wav") == "media/audio/take/a.wav"
    for name in ("../etc/passwd", "/etc/passwd", "media/../../x", "", "a\\b"):
        with pytest.raises(BadSnapshot):
            safe_member(name)


def test_lines_join_what_chunks_split() -> None:
    assert list(lines([b"ab", b"c\nd", b"e\n", b"f"])) == [b"abc", b"de", b"f"]


def test_a_member_longer_than_listed_is_refused_as_it_is_read(tmp_path: Path) -> None:
    target = FolderTarget(tmp_path)
    written = target.write("t.jsonl", [b"one\n", b"two\n"])
    assert written == Written(8, hashlib.sha256(b"one\ntwo\n").hexdigest())
    assert b"".join(checked(target, "t.jsonl", written)) == b"one\ntwo\n"
    target.write("t.jsonl", [b"one\ntwo\nthree\n"])
    with pytest.raises(BadSnapshot, match="longer than the manifest"):
        list(checked(target, "t.jsonl", written))


def test_scheduled_snapshot_names_sort_by_time() -> None:
    day = datetime.datetime(2026, 12, 7, 2, 0, tzinfo=datetime.UTC)
    names = [snapshot_name(day + datetime.timedelta(hours=hours)) for hours in (30, 1, 0)]
    assert sorted(names) == names[::-1]
    assert names[-1] == "snapshot-20261207T020000000000Z"
