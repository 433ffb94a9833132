"""Zip bombs and lying sizes are refused before more than the cap reaches disk (webapp.lib.archives;
a lead's 1 MB gold-import zip once made a worker write 1.07 GB before any check)."""

from __future__ import annotations

import io
import random
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from webapp.lib.archives import (
    ArchiveRefused,
    UnpackBudget,
    UnpackLimits,
    archive_size,
    check_listing,
    member_chunks,
)

MiB = 2**20
NOISE = random.Random(40).randbytes(6 * MiB)  # audio-like: barely compresses
LIMITS = UnpackLimits(max_members=100, max_bytes=8 * MiB, max_member_bytes=4 * MiB, max_ratio=100)


def zip_of(*members: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for info, data in members:
            zipped.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def lying(data: bytes, declared: int) -> bytes:
    """A one-member zip whose headers (local and central) declare `declared` unpacked bytes."""
    raw = bytearray(zip_of(("gold.jsonl", data)))
    struct.pack_into("<I", raw, raw.find(b"PK\x03\x04") + 22, declared)
    struct.pack_into("<I", raw, raw.find(b"PK\x01\x02") + 24, declared)
    return bytes(raw)


def link(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def unpack(data: bytes, folder: Path, limits: UnpackLimits = LIMITS) -> None:
    """What every reader does: the listing checked, then each member written chunk by chunk."""
    with zipfile.ZipFile(io.BytesIO(data)) as zipped:
        members = [member for member in zipped.infolist() if not member.is_dir()]
        check_listing(members, limits, archive_size(zipped))
        budget = UnpackBudget(limits)
        for member in members:
            with (folder / member.filename.replace("/", "_")).open("wb") as out:
                for chunk in member_chunks(zipped, member, budget, 64 * 1024):
                    out.write(chunk)


def on_disk(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.iterdir())


CORPUS = {
    # 1,000-fold: 40 MB of zeros in ~40 KB, as the pentest's 1 MB -> 1.07 GB
    "one-member bomb": (zip_of(("gold.jsonl", bytes(40 * MiB))), "expands"),
    # each member under the per-member cap and ratio floor, together 1,000-fold
    "many small bombs": (zip_of(*[(f"audio/{n}.wav", bytes(MiB)) for n in range(6)]), "expands"),
    "declared over the cap": (zip_of(("a.wav", NOISE[: 5 * MiB])), "at most 4 MB each"),
    "too many members": (zip_of(*[(f"{n}.txt", b"x") for n in range(101)]), "holds 101 files"),
    "declares less than it holds": (lying(bytes(3 * MiB), 1000), "Bad CRC"),
    "declares more than it holds": (lying(b"0" * 100_000, 200_000), "not the 200,000 bytes it declares"),
    "a link": (zip_of((link("gold.jsonl"), b"/etc/passwd")), "is a link"),
}


@pytest.mark.parametrize(("archive", "reason"), CORPUS.values(), ids=CORPUS.keys())
def test_the_corpus_is_refused_with_at_most_the_cap_on_disk(
    tmp_path: Path, archive: bytes, reason: str
) -> None:
    with pytest.raises((ArchiveRefused, zipfile.BadZipFile), match=reason):
        unpack(archive, tmp_path)
    assert on_disk(tmp_path) <= LIMITS.max_bytes


@pytest.mark.parametrize(("archive", "reason"), list(CORPUS.values())[:4], ids=list(CORPUS)[:4])
def test_a_bomb_is_refused_on_its_listing_before_a_byte_is_written(
    tmp_path: Path, archive: bytes, reason: str
) -> None:
    with pytest.raises(ArchiveRefused, match=reason):
        unpack(archive, tmp_path)
    assert on_disk(tmp_path) == 0


def test_bytes_past_the_cap_never_reach_the_disk_even_when_the_listing_passed(tmp_path: Path) -> None:
    # Three honest members of 3 MB: the listing (9 MB) would pass a cap of 8 MB only if it lied;
    # checked on the bytes alone (a listing trusted), the third member stops at the cap.
    archive = zip_of(*[(f"{n}.wav", NOISE[n * MiB : (n + 3) * MiB]) for n in range(3)])
    budget = UnpackBudget(LIMITS)
    with (
        zipfile.ZipFile(io.BytesIO(archive)) as zipped,
        pytest.raises(ArchiveRefused, match="unpacks past 8 MB"),
    ):
        for member in zipped.infolist():
            with (tmp_path / member.filename).open("wb") as out:
                for chunk in member_chunks(zipped, member, budget, 64 * 1024):
                    out.write(chunk)
    assert on_disk(tmp_path) <= LIMITS.max_bytes


def test_real_exports_pass(tmp_path: Path) -> None:
    noisy = NOISE[: 2 * MiB]
    text = b'{"id": "EE-1", "perception": {"emotion": "angry"}}\n' * 20_000  # ~1 MB of JSON lines
    unpack(zip_of(("audio/EE-1.wav", noisy), ("gold.jsonl", text)), tmp_path)
    assert on_disk(tmp_path) == len(noisy) + len(text)
