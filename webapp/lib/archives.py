"""Reading an uploaded zip archive as hostile: every cap is checked on its listing before one byte
is unpacked, and again on the bytes that really come out.

A lead's 1 MB gold-import zip made a worker write 1.07 GB to disk before any check, because the
only cap was 20 GB per job. So, for every reader (gold import, output audio, EchoMind sets):

- `check_listing`: too many members, a member or the whole declaring more than its cap, a member
  or the whole expanding by more than `max_ratio` (a zip bomb's ratio is ~1,000; audio, JSON and
  parquet stay far below 100), links, encrypted members. Ratios are judged only past
  `RATIO_FLOOR_BYTES`, where a bomb must be to matter.
- `member_chunks`: a member's bytes as they come out, refused as soon as they pass what the member
  declared (its size may lie) or what the archive may still unpack (`UnpackBudget`), before the
  chunk that would pass it is handed on, so no more than the cap is ever written.

Pure: no Django. Each reader turns `ArchiveRefused` into its own error for its page or job.
"""

from __future__ import annotations

import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

CHUNK_BYTES = 2**20
# Below this many unpacked bytes a member's (or the archive's) ratio is not judged: a small text
# file of repeated lines legitimately compresses 100-fold, and it cannot fill a disk.
RATIO_FLOOR_BYTES = 2**20
DEFAULT_MAX_RATIO = 100.0
# Written on every member of an archive we make: the same files make the same bytes whenever
# they are written (the current time made two downloads a second apart differ).
ARCHIVE_TIME = (1980, 1, 1, 0, 0, 0)


def archive_member(name: str) -> zipfile.ZipInfo:
    """Return the header of member `name` of an archive we write: a fixed time, deflated."""
    member = zipfile.ZipInfo(name, date_time=ARCHIVE_TIME)
    member.compress_type = zipfile.ZIP_DEFLATED
    return member


class ArchiveRefused(ValueError):
    """The archive, or one of its members, breaks a cap or holds what no upload should."""


@dataclass(frozen=True)
class UnpackLimits:
    max_members: int
    max_bytes: int  # every member unpacked, in all
    max_member_bytes: int | None = None  # one member unpacked
    max_ratio: float = DEFAULT_MAX_RATIO  # unpacked : packed, per member and for the whole archive


def _size(count: int) -> str:
    return f"{count / 2**20:,.0f} MB" if count >= 2**20 else f"{count:,} bytes"


def check_listing(members: list[zipfile.ZipInfo], limits: UnpackLimits, archive_bytes: int) -> None:
    """Raise ArchiveRefused when the listing breaks a cap (see the module docstring); directories
    are not counted. `archive_bytes` is the size of the zip file itself."""
    files = [member for member in members if not member.is_dir()]
    if len(files) > limits.max_members:
        raise ArchiveRefused(
            f"the archive holds {len(files):,} files; at most {limits.max_members:,} are accepted"
        )
    declared = 0
    for member in files:
        if stat.S_ISLNK(member.external_attr >> 16):
            raise ArchiveRefused(f"archive member {member.filename!r} is a link; only files are accepted")
        if member.flag_bits & 0x1:
            raise ArchiveRefused(f"archive member {member.filename!r} is encrypted")
        if _ratio_too_high(member.file_size, member.compress_size, limits.max_ratio):
            raise ArchiveRefused(
                f"archive member {member.filename!r} expands {member.file_size / max(member.compress_size, 1):,.0f}"
                f"-fold; at most {limits.max_ratio:,.0f}-fold is accepted (a zip bomb?)"
            )
        if limits.max_member_bytes is not None and member.file_size > limits.max_member_bytes:
            raise ArchiveRefused(
                f"archive member {member.filename!r} unpacks to {_size(member.file_size)}; "
                f"at most {_size(limits.max_member_bytes)} each"
            )
        declared += member.file_size
    if declared > limits.max_bytes:
        raise ArchiveRefused(f"the archive unpacks to {_size(declared)}; at most {_size(limits.max_bytes)}")
    if _ratio_too_high(declared, archive_bytes, limits.max_ratio):
        raise ArchiveRefused(
            f"the archive expands {declared / max(archive_bytes, 1):,.0f}-fold; at most "
            f"{limits.max_ratio:,.0f}-fold is accepted (a zip bomb?)"
        )


def archive_size(archive: zipfile.ZipFile) -> int:
    """Return the size of the zip file itself, in bytes."""
    if archive.fp is None:
        raise ValueError("the archive is closed")
    position = archive.fp.tell()
    size = archive.fp.seek(0, 2)
    archive.fp.seek(position)
    return size


def _ratio_too_high(unpacked: int, packed: int, max_ratio: float) -> bool:
    return unpacked > RATIO_FLOOR_BYTES and unpacked > max_ratio * max(packed, 1)


class UnpackBudget:
    """The bytes an archive may still unpack, counted on what really comes out."""

    def __init__(self, limits: UnpackLimits) -> None:
        self.limits = limits
        self.left = limits.max_bytes

    def take(self, member: zipfile.ZipInfo, so_far: int, chunk: bytes) -> None:
        """Count `chunk`, the next bytes of `member` after `so_far`; raise ArchiveRefused first when
        they pass what the member declared, its own cap or the archive's."""
        total = so_far + len(chunk)
        if total > member.file_size:
            raise ArchiveRefused(
                f"archive member {member.filename!r} holds more than the {_size(member.file_size)} it declares"
            )
        if self.limits.max_member_bytes is not None and total > self.limits.max_member_bytes:
            raise ArchiveRefused(
                f"archive member {member.filename!r} unpacks past {_size(self.limits.max_member_bytes)}"
            )
        if len(chunk) > self.left:
            raise ArchiveRefused(f"the archive unpacks past {_size(self.limits.max_bytes)}")
        self.left -= len(chunk)


def member_chunks(
    archive: zipfile.ZipFile, member: zipfile.ZipInfo, budget: UnpackBudget, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[bytes]:
    """Yield a member's unpacked bytes, each chunk counted by `budget` before it is yielded.

    A member that ends short of its declared size is refused too (a truncated or lying entry)."""
    done = 0
    with archive.open(member) as stream:
        while chunk := stream.read(chunk_bytes):
            budget.take(member, done, chunk)
            done += len(chunk)
            yield chunk
    if done != member.file_size:
        raise ArchiveRefused(
            f"archive member {member.filename!r} holds {_size(done)}, not the {_size(member.file_size)} it declares"
        )


def read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, budget: UnpackBudget) -> bytes:
    """Return a member's bytes, read under `budget` (see `member_chunks`)."""
    return b"".join(member_chunks(archive, member, budget))
