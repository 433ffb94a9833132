"""Where an import's response audio comes from: a zip upload, a local folder or an S3 prefix."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import IO, Any, Protocol

from django.conf import settings

from evaluation.outputs.parsing import AUDIO_EXTENSIONS, OutputRow
from webapp.env import env_str


class AudioSource(Protocol):
    """Where an import's response audio files are: names relative to the source's root."""

    def names(self) -> frozenset[str]: ...

    def read(self, name: str) -> bytes: ...


class AudioTooLarge(ValueError):
    """An audio file is larger than ECHOSTUDIO_UPLOAD_MAX_BYTES."""


class ZipAudioSource:
    """Audio files inside a zip archive (macOS resource forks ignored)."""

    def __init__(self, file: IO[bytes] | str | Path) -> None:
        self._zip = zipfile.ZipFile(file)
        self._infos = {
            info.filename: info
            for info in self._zip.infolist()
            if not info.is_dir() and not info.filename.startswith("__MACOSX/")
        }

    def names(self) -> frozenset[str]:
        return frozenset(self._infos)

    def read(self, name: str) -> bytes:
        info = self._infos[name]
        # Checked before decompressing: a small archive can expand to gigabytes.
        if info.file_size > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{info.file_size} bytes")
        return self._zip.read(info)


class DirectoryAudioSource:
    """Audio files under a local folder (management command)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._names = frozenset(
            path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()
        )

    def names(self) -> frozenset[str]:
        return self._names

    def read(self, name: str) -> bytes:
        path = self.root / name
        if path.stat().st_size > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{path.stat().st_size} bytes")
        return path.read_bytes()


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

    def names(self) -> frozenset[str]:
        return frozenset(self._sizes)

    def read(self, name: str) -> bytes:
        if self._sizes[name] > settings.UPLOAD_MAX_BYTES:
            raise AudioTooLarge(f"{self._sizes[name]} bytes")
        response = self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)
        return bytes(response["Body"].read())


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
