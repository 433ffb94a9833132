"""Where a studio's backup snapshots are kept, and what proves one is whole (`manage.py backup`).

A snapshot is a folder (on disk, or an S3 prefix) holding:

- `database/<app>.<model>.jsonl`: one JSON array per row, columns as the manifest names them;
- `media/<storage key>`: every media file, byte for byte;
- `media.jsonl`: one line per media file: its key, size and sha256 (a list that may be long, so
  read line by line, never whole);
- `manifest.json`, written last: the app version, the applied migrations, and per table its
  columns, row count, size and sha256, plus the size and sha256 of `media.jsonl`. The manifest
  carries the sha256 of its own body, so a damaged manifest is told from a damaged file.

A snapshot without its manifest is partial (the backup stopped before the end) and is refused.
Nothing here imports Django: the dump and the restore (webapp.backup) are the Django side.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

MANIFEST = "manifest.json"
MEDIA_INDEX = "media.jsonl"
FORMAT = "echostudio-snapshot/1"
CHUNK = 1024 * 1024
SNAPSHOT_PREFIX = "snapshot-"


class BadSnapshot(Exception):
    """The snapshot is partial, truncated or corrupt: nothing may be restored from it."""


@dataclass(frozen=True)
class Written:
    size: int
    sha256: str


def canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def sealed(body: dict[str, Any]) -> bytes:
    """Return the manifest's bytes: the body with the sha256 of its canonical form."""
    return json.dumps({**body, "body_sha256": hashlib.sha256(canonical(body)).hexdigest()}, indent=1).encode()


def unsealed(data: bytes) -> dict[str, Any]:
    """Return a manifest's body, or refuse one that is not whole or not one of ours."""
    try:
        manifest = json.loads(data)
    except ValueError:
        raise BadSnapshot(f"{MANIFEST} is not valid JSON (truncated or damaged)") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BadSnapshot(f"{MANIFEST} is not an EchoStudio snapshot manifest ({FORMAT})")
    claimed = manifest.pop("body_sha256", None)
    if claimed != hashlib.sha256(canonical(manifest)).hexdigest():
        raise BadSnapshot(f"{MANIFEST} does not match its own checksum (damaged or edited)")
    return manifest


def safe_member(name: str) -> str:
    """Return a snapshot member's relative name, refusing one that would leave the snapshot."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name:
        raise BadSnapshot(f"the snapshot names a file outside itself: {name!r}")
    return str(path)


class Target:
    """A snapshot's folder: on the local disk, or under an S3 prefix."""

    description: str

    def write(self, name: str, chunks: Iterable[bytes]) -> Written:
        raise NotImplementedError

    def open(self, name: str) -> IO[bytes]:
        raise NotImplementedError

    def exists(self, name: str) -> bool:
        raise NotImplementedError

    def is_empty(self) -> bool:
        raise NotImplementedError

    def child(self, name: str) -> Target:
        raise NotImplementedError

    def children(self) -> list[str]:
        """Names of the folders directly inside (snapshots under a rotation root)."""
        raise NotImplementedError

    def remove(self) -> None:
        raise NotImplementedError


class _Hashing:
    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.size = 0

    def feed(self, chunk: bytes) -> bytes:
        self.digest.update(chunk)
        self.size += len(chunk)
        return chunk

    def written(self) -> Written:
        return Written(self.size, self.digest.hexdigest())


class FolderTarget(Target):
    def __init__(self, root: Path) -> None:
        self.root = root
        self.description = str(root)

    def write(self, name: str, chunks: Iterable[bytes]) -> Written:
        path = self.root / safe_member(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        hashing = _Hashing()
        with path.open("wb") as out:
            for chunk in chunks:
                out.write(hashing.feed(chunk))
        return hashing.written()

    def open(self, name: str) -> IO[bytes]:
        try:
            return (self.root / safe_member(name)).open("rb")
        except FileNotFoundError:
            raise BadSnapshot(f"{name} is missing from the snapshot") from None

    def exists(self, name: str) -> bool:
        return (self.root / safe_member(name)).is_file()

    def is_empty(self) -> bool:
        return not self.root.exists() or not any(self.root.iterdir())

    def child(self, name: str) -> Target:
        return FolderTarget(self.root / safe_member(name))

    def children(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(entry.name for entry in self.root.iterdir() if entry.is_dir())

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class S3Target(Target):
    """An S3 prefix, reached with boto3's standard configuration (AWS_* variables, AWS_ENDPOINT_URL
    for MinIO and other S3-compatible stores)."""

    def __init__(self, bucket: str, prefix: str, client: Any = None) -> None:
        import boto3

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client or boto3.client("s3")
        self.description = f"s3://{bucket}/{self.prefix}"

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{safe_member(name)}" if self.prefix else safe_member(name)

    def write(self, name: str, chunks: Iterable[bytes]) -> Written:
        # Spooled through a temporary file: memory stays flat whatever the file's size, and the
        # upload knows its length (multipart for large files).
        hashing = _Hashing()
        with tempfile.TemporaryFile() as spool:
            for chunk in chunks:
                spool.write(hashing.feed(chunk))
            spool.seek(0)
            self.client.upload_fileobj(spool, self.bucket, self._key(name))
        return hashing.written()

    def open(self, name: str) -> IO[bytes]:
        try:
            body: IO[bytes] = self.client.get_object(Bucket=self.bucket, Key=self._key(name))["Body"]
        except self.client.exceptions.NoSuchKey:
            raise BadSnapshot(f"{name} is missing from the snapshot") from None
        return body

    def exists(self, name: str) -> bool:
        listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self._key(name), MaxKeys=1)
        return any(entry["Key"] == self._key(name) for entry in listed.get("Contents", []))

    def is_empty(self) -> bool:
        listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self._folder(), MaxKeys=1)
        return not listed.get("Contents")

    def _folder(self) -> str:
        return f"{self.prefix}/" if self.prefix else ""

    def child(self, name: str) -> Target:
        return S3Target(self.bucket, self._key(name), self.client)

    def children(self) -> list[str]:
        names: list[str] = []
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._folder(), Delimiter="/"):
            names += [
                entry["Prefix"][len(self._folder()) :].strip("/") for entry in page.get("CommonPrefixes", [])
            ]
        return sorted(names)

    def remove(self) -> None:
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._folder()):
            keys = [{"Key": entry["Key"]} for entry in page.get("Contents", [])]
            if keys:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})


def target_for(location: str) -> Target:
    """Return the target a command line names: a folder, or s3://bucket/prefix."""
    if location.startswith("s3://"):
        bucket, _, prefix = location[len("s3://") :].partition("/")
        if not bucket:
            raise ValueError(f"{location!r} names no bucket (s3://bucket/prefix)")
        return S3Target(bucket, prefix)
    return FolderTarget(Path(location).expanduser().resolve())


def read_chunks(handle: IO[bytes]) -> Iterator[bytes]:
    with handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def checked(target: Target, name: str, expected: Written) -> Iterator[bytes]:
    """Yield a member's bytes, then refuse it if its size or sha256 differ from the manifest's."""
    hashing = _Hashing()
    for chunk in read_chunks(target.open(name)):
        if hashing.size + len(chunk) > expected.size:
            raise BadSnapshot(f"{name} is longer than the manifest says ({expected.size} bytes)")
        yield hashing.feed(chunk)
    if hashing.size != expected.size:
        raise BadSnapshot(f"{name} is truncated: {hashing.size} of {expected.size} bytes")
    if hashing.digest.hexdigest() != expected.sha256:
        raise BadSnapshot(f"{name} is corrupt: its sha256 differs from the manifest's")


def lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Split a stream of bytes into lines (without their newline), holding one line at a time."""
    rest = b""
    for chunk in chunks:
        rest += chunk
        *whole, rest = rest.split(b"\n")
        yield from whole
    if rest:
        yield rest


@contextmanager
def nothing_written_on_failure(target: Target) -> Iterator[None]:
    """Remove what a failed backup wrote, so no partial snapshot is left looking like one."""
    try:
        yield
    except BaseException:
        target.remove()
        raise


def snapshots_to_prune(names: list[str], complete: set[str], keep: int) -> list[str]:
    """Return the snapshots a rotation removes: complete ones beyond the newest `keep`, and partial
    ones older than the newest complete one (a backup that stopped; a running one is newer).

    Names sort by time (`snapshot-<UTC timestamp>`); other folders are never touched."""
    ours = sorted(name for name in names if name.startswith(SNAPSHOT_PREFIX))
    whole = [name for name in ours if name in complete]
    kept = set(whole[-keep:]) if keep > 0 else set(whole)
    newest_whole = whole[-1] if whole else ""
    return [
        name
        for name in ours
        if (name in complete and name not in kept) or (name not in complete and name < newest_whole)
    ]


def snapshot_name(now: datetime.datetime) -> str:
    """A scheduled snapshot's folder name, which sorts by time: snapshot-20260101T020000123456Z."""
    return f"{SNAPSHOT_PREFIX}{now.astimezone(datetime.UTC):%Y%m%dT%H%M%S%fZ}"


def backup_schedule(target: str, keep: int, every_hours: float) -> dict[str, dict[str, Any]]:
    """Celery beat's entry for scheduled snapshots: none unless a target and a count to keep are set."""
    if not target or keep < 1:
        return {}
    return {"backup-snapshot": {"task": "webapp.backup_snapshot", "schedule": every_hours * 3600.0}}
