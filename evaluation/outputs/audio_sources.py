"""Where an import's response audio comes from: a zip upload, a local folder or an S3 prefix.

Every source is read as hostile. Opening one checks its whole listing before any file is read and
refuses it (`AudioSourceRefused`, with a message for the admin) when it is not a zip, holds an
unsafe name (`parsing.unsafe_path_reason`: "../", absolute, NUL), a symlink, an encrypted entry or
the same name twice, or declares more files or bytes than OUTPUT_IMPORT_MAX_FILES and
OUTPUT_IMPORT_MAX_BYTES. Declared sizes may lie, so reading counts the bytes that really arrive and
stops one past each cap (`AudioTooLarge`); a damaged entry is `AudioUnreadable`. Nothing is
extracted to disk.
"""

from __future__ import annotations

import stat
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import IO, Any, Protocol

from django.conf import settings

from evaluation.outputs.parsing import AUDIO_EXTENSIONS, OutputRow, unsafe_path_reason
from webapp.env import env_str
from webapp.lib.archives import ArchiveRefused, UnpackLimits, archive_size, check_listing

_CHUNK = 1024 * 1024


class AudioSource(Protocol):
    """Where an import's response audio files are: names relative to the source's root."""

    def names(self) -> frozenset[str]: ...

    def read(self, name: str) -> bytes: ...


class AudioSourceRefused(ValueError):
    """The whole source is refused before any file is read; the message is for the admin."""


class AudioTooLarge(ValueError):
    """An audio file is larger than ECHOSTUDIO_UPLOAD_MAX_BYTES, or the source expands past its cap."""


class AudioUnreadable(ValueError):
    """A file of the source cannot be read (a damaged or unsupported zip entry)."""


class _ReadBudget:
    """Bytes a source may still deliver in all: declared sizes can lie, delivered bytes cannot."""

    def __init__(self) -> None:
        self.left = int(settings.OUTPUT_IMPORT_MAX_BYTES)

    def read(self, stream: IO[bytes]) -> bytes:
        """Read a stream to its end, refusing one byte past the per-file or the total cap."""
        limit = min(int(settings.UPLOAD_MAX_BYTES), self.left)
        parts, size = [], 0
        while chunk := stream.read(min(_CHUNK, limit + 1 - size)):
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                if limit < settings.UPLOAD_MAX_BYTES:
                    raise AudioTooLarge(
                        f"the files expand past {_mib(settings.OUTPUT_IMPORT_MAX_BYTES)} in all"
                    )
                raise AudioTooLarge(f"over {_mib(settings.UPLOAD_MAX_BYTES)}")
        self.left -= size
        return b"".join(parts)


def _check_listing(kind: str, names: list[str], total_bytes: int) -> None:
    """Refuse a listing with unsafe or repeated names, too many files or too many declared bytes."""
    if len(names) > settings.OUTPUT_IMPORT_MAX_FILES:
        raise AudioSourceRefused(
            f"The {kind} holds {len(names)} files; at most {settings.OUTPUT_IMPORT_MAX_FILES} are accepted."
        )
    if total_bytes > settings.OUTPUT_IMPORT_MAX_BYTES:
        raise AudioSourceRefused(
            f"The {kind} expands to {_mib(total_bytes)}; at most {_mib(settings.OUTPUT_IMPORT_MAX_BYTES)} "
            "are accepted."
        )
    seen: set[str] = set()
    for name in names:
        if (reason := unsafe_path_reason(name)) is not None:
            raise AudioSourceRefused(f"The {kind} holds {reason}; nothing was imported.")
        normal = "/".join(part for part in name.replace("\\", "/").split("/") if part not in ("", "."))
        if normal in seen:
            raise AudioSourceRefused(f"The {kind} holds {name!r} twice; nothing was imported.")
        seen.add(normal)


def _unpack_limits() -> UnpackLimits:
    return UnpackLimits(
        max_members=int(settings.OUTPUT_IMPORT_MAX_FILES),
        max_bytes=int(settings.OUTPUT_IMPORT_MAX_BYTES),
        max_member_bytes=int(settings.UPLOAD_MAX_BYTES),
        max_ratio=float(settings.ARCHIVE_MAX_RATIO),
    )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.0f} MB"


class ZipAudioSource:
    """Audio files inside a zip archive (macOS resource forks ignored), checked as described above."""

    def __init__(self, file: IO[bytes] | str | Path) -> None:
        try:
            self._zip = zipfile.ZipFile(file)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as error:
            raise AudioSourceRefused(f"The audio upload is not a readable zip archive ({error}).") from None
        files = [info for info in infos if not info.filename.startswith("__MACOSX/")]
        for info in files:
            if stat.S_ISLNK(info.external_attr >> 16):
                raise AudioSourceRefused(
                    f"The zip holds a symbolic link ({info.filename!r}); nothing was imported."
                )
            if info.flag_bits & 0x1:
                raise AudioSourceRefused(f"The zip holds an encrypted file ({info.filename!r}).")
        # orig_filename: zipfile cuts a name at its first NUL; the name as stored is what is judged.
        _check_listing(
            "zip",
            [info.orig_filename for info in files],
            sum(info.file_size for info in files if not info.is_dir()),
        )
        try:  # a zip bomb's expansion, before anything is read (webapp.lib.archives)
            check_listing(files, _unpack_limits(), archive_size(self._zip))
        except ArchiveRefused as refused:
            raise AudioSourceRefused(f"The zip is refused: {refused}; nothing was imported.") from None
        self._infos = {info.filename: info for info in files if not info.is_dir()}
        self._budget = _ReadBudget()

    def names(self) -> frozenset[str]:
        return frozenset(self._infos)

    def read(self, name: str) -> bytes:
        info = self._infos[name]
        # Checked before decompressing: a small archive can expand to gigabytes.
        if info.file_size > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{info.file_size} bytes")
        try:
            with self._zip.open(info) as stream:
                return self._budget.read(stream)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
            raise AudioUnreadable(f"damaged in the zip ({error})") from None


class DirectoryAudioSource:
    """Audio files under a local folder (management command)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        paths = list(root.rglob("*"))
        links = [path for path in paths if path.is_symlink()]
        if links:
            raise AudioSourceRefused(f"The folder holds a symbolic link ({links[0]}); nothing was imported.")
        files = [path for path in paths if path.is_file()]
        self._names = frozenset(path.relative_to(root).as_posix() for path in files)
        _check_listing("folder", sorted(self._names), sum(path.stat().st_size for path in files))
        self._budget = _ReadBudget()

    def names(self) -> frozenset[str]:
        return self._names

    def read(self, name: str) -> bytes:
        path = self.root / name
        if path.stat().st_size > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{path.stat().st_size} bytes")
        with path.open("rb") as stream:
            return self._budget.read(stream)


class S3AudioSource:
    """Audio files under an S3 prefix such as s3://bucket/runs/qwen3-omni/ (boto3 credentials)."""

    def __init__(self, uri: str, client: Any = None) -> None:
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        if not uri.startswith("s3://") or not bucket:
            raise ValueError("an S3 prefix looks like s3://bucket/folder/")
        if client is None:
            import boto3

            client = boto3.client(
                "s3",
                endpoint_url=env_str("AWS_S3_ENDPOINT_URL") or None,
                region_name=env_str("AWS_S3_REGION_NAME") or None,
            )
        self.client, self.bucket = client, bucket
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self._sizes: dict[str, int] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=self.prefix):
            for entry in page.get("Contents", []):
                name = entry["Key"][len(self.prefix) :]
                if name and not name.endswith("/"):
                    self._sizes[name] = int(entry.get("Size", 0))
            if len(self._sizes) > settings.OUTPUT_IMPORT_MAX_FILES:
                break  # no need to list a million keys to refuse them
        _check_listing("S3 prefix", sorted(self._sizes), sum(self._sizes.values()))
        self._budget = _ReadBudget()

    def names(self) -> frozenset[str]:
        return frozenset(self._sizes)

    def read(self, name: str) -> bytes:
        if self._sizes[name] > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{self._sizes[name]} bytes")
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)
            # The object may have grown since it was listed: the budget counts what arrives.
            return self._budget.read(response["Body"])
        except (BotoCoreError, ClientError) as error:  # gone since listed, access revoked, network
            raise AudioUnreadable(f"not readable from the bucket ({error})") from None


class AudioIndex:
    """Finds a row's file by its exact name, or by its base name when that is unambiguous."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self.by_basename: dict[str, list[str]] = {}
        for name in sorted(self.names):
            self.by_basename.setdefault(PurePosixPath(name).name, []).append(name)

    def find(self, row: OutputRow) -> str | None:
        wanted = [row.audio_name] if row.audio_name else [f"{row.item_id}.{ext}" for ext in AUDIO_EXTENSIONS]
        for name in wanted:
            cleaned = name.lstrip("./")
            if cleaned in self.names:
                return cleaned
            matches = self.by_basename.get(PurePosixPath(cleaned).name, [])
            if len(matches) == 1:
                return matches[0]
        return None
