"""Back up a whole studio (database and media) to one snapshot, and rebuild an empty studio from it.

The database is dumped as one JSON Lines file per table (webapp.lib.snapshots describes the
layout), read from one consistent moment:

- SQLite: the live database is first copied with SQLite's online backup API
  (`sqlite3.Connection.backup`), and the tables are read from that copy;
- PostgreSQL: every table is read inside one REPEATABLE READ, READ ONLY transaction.

JSON Lines rather than a native dump (pg_dump, the SQLite file): one format for both databases, so
a snapshot of a SQLite studio restores into PostgreSQL and back, no pg_dump whose version must
match the server, and every table is streamed in chunks, so memory stays flat as the studio grows.
Tables are the apps registry's models, so a table an app adds is backed up without a change here.

Media are read from the storage the site uses (local disk or S3) after the database moment. Media
keys are random and written once, so every file a snapshot's rows name is there; a file uploaded
during the backup may be copied too, and is then only unused.

A restore reads the whole snapshot and checks every checksum, size and row count before it writes
anything; then it writes the media, then every table in one transaction.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import os
import sqlite3
import tempfile
import time
import tomllib
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage, default_storage
from django.core.management.color import no_style
from django.db import connections, models, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.utils import load_backend
from django.utils.duration import duration_iso_string

from webapp.lib.snapshots import (
    FORMAT,
    MANIFEST,
    MEDIA_INDEX,
    BadSnapshot,
    Target,
    Written,
    checked,
    lines,
    nothing_written_on_failure,
    read_chunks,
    sealed,
    snapshot_name,
    snapshots_to_prune,
    target_for,
    unsealed,
)

Progress = Callable[[float | None, str], None]
SNAPSHOT_ALIAS = "echostudio_backup_snapshot"
ROWS_PER_CHUNK = 2000
PROGRESS_EVERY_SECONDS = 2.0


class RestoreRefused(Exception):
    """The studio to restore into is not empty, or does not match the snapshot's schema."""


def _quiet(fraction: float | None, message: str) -> None:
    return None


def printed_progress(out: Any) -> Progress:
    """Progress as the project's commands print it (seed_demo): seconds so far, share done, what."""
    started = time.monotonic()

    def progress(fraction: float | None, message: str) -> None:
        done = f"{fraction:4.0%}" if fraction is not None else "    "
        out.write(f"  [{time.monotonic() - started:4.0f} s] {done} {message}")
        out.flush()

    return progress


class _Throttled:
    """Passes on a progress line at most every PROGRESS_EVERY_SECONDS, unless forced."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.last = 0.0

    def __call__(self, fraction: float | None, message: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= PROGRESS_EVERY_SECONDS:
            self.last = now
            self.progress(fraction, message)


# --- What is backed up --------------------------------------------------------------------------


def backed_up_models() -> list[type[models.Model]]:
    """Every model with a table of its own (many-to-many tables included), in a stable order."""
    chosen = [
        model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and not model._meta.proxy and not model._meta.swapped
    ]
    return sorted(chosen, key=lambda model: model._meta.label_lower)


def columns(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    return [field for field in model._meta.local_concrete_fields if not getattr(field, "generated", False)]


def applied_migrations(alias: str = "default") -> list[str]:
    return sorted(f"{app}.{name}" for app, name in MigrationRecorder(connections[alias]).applied_migrations())


def app_version() -> str:
    try:
        with (Path(settings.BASE_DIR) / "pyproject.toml").open("rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


# --- Row encoding: JSON, with the few types JSON lacks spelled as the fields read them back -------


def _encoded(value: Any) -> Any:
    if isinstance(value, datetime.timedelta):
        return duration_iso_string(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"cannot back up a value of type {type(value).__name__}")


def row_line(row: Iterable[Any]) -> bytes:
    return json.dumps(list(row), default=_encoded, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


_DECODED_TYPES = {
    "DateTimeField",
    "DateField",
    "TimeField",
    "DecimalField",
    "UUIDField",
    "DurationField",
    "BinaryField",
}


def _decoder(field: models.Field[Any, Any]) -> Callable[[Any], Any] | None:
    """How a column's JSON value becomes the field's value: None where JSON already holds it."""
    target = field.target_field if field.is_relation else field  # type: ignore[attr-defined]
    if target.get_internal_type() in _DECODED_TYPES:
        return lambda value: None if value is None else target.to_python(value)
    return None


# --- Backup ----------------------------------------------------------------------------------------


@contextmanager
def consistent_database() -> Iterator[str]:
    """Yield a database alias whose reads all see one moment of the default database."""
    source = connections["default"]
    if source.in_atomic_block:
        raise RuntimeError("a backup reads its own transaction: run it outside any transaction")
    if source.vendor == "postgresql":
        with transaction.atomic(), source.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield "default"
        return
    if source.vendor != "sqlite":
        raise RuntimeError(f"backups support SQLite and PostgreSQL, not {source.vendor}")
    folder = tempfile.mkdtemp(prefix="echostudio-backup-")
    copy_path = Path(folder) / "snapshot.sqlite3"
    source.ensure_connection()
    with sqlite3.connect(copy_path) as copy:
        source.connection.backup(copy)  # SQLite's online backup: one consistent copy
    copy.close()
    # A connection of this process only, never listed in settings: nothing else may be routed to it.
    wrapper = load_backend(source.settings_dict["ENGINE"]).DatabaseWrapper(
        {**source.settings_dict, "NAME": str(copy_path)}, alias=SNAPSHOT_ALIAS
    )
    connections[SNAPSHOT_ALIAS] = wrapper
    try:
        yield SNAPSHOT_ALIAS
    finally:
        wrapper.close()
        del connections[SNAPSHOT_ALIAS]
        copy_path.unlink(missing_ok=True)
        os.rmdir(folder)


def _table_lines(
    model: type[models.Model], alias: str, counted: list[int], report: Callable[[int], None]
) -> Iterator[bytes]:
    names = [field.attname for field in columns(model)]
    rows = model._base_manager.using(alias).order_by("pk").values_list(*names)
    for row in rows.iterator(chunk_size=ROWS_PER_CHUNK):
        counted[0] += 1
        if counted[0] % ROWS_PER_CHUNK == 0:
            report(counted[0])
        yield row_line(row)


def media_keys(storage: Storage) -> Iterator[str]:
    """Every file's key in the storage, listed as it goes (never the whole listing at once)."""
    if isinstance(storage, FileSystemStorage):
        root = Path(storage.location)
        if root.is_dir():
            yield from _files_under(root, root)
        return
    bucket = getattr(storage, "bucket", None)
    if bucket is not None:  # django-storages' S3Storage: boto3 lists 1,000 keys a page
        location = str(getattr(storage, "location", "") or "").strip("/")
        prefix = f"{location}/" if location else ""
        for summary in bucket.objects.filter(Prefix=prefix):
            if not summary.key.endswith("/"):
                yield summary.key[len(prefix) :]
        return
    yield from _listed(storage, "")


def _files_under(root: Path, folder: Path) -> Iterator[str]:
    folders = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path).relative_to(root).as_posix()
    for sub in folders:
        yield from _files_under(root, sub)


def _listed(storage: Storage, folder: str) -> Iterator[str]:
    dirs, files = storage.listdir(folder)
    for name in files:
        yield f"{folder}{name}"
    for name in dirs:
        yield from _listed(storage, f"{folder}{name}/")


@dataclass
class BackupReport:
    tables: int
    rows: int
    media_files: int
    media_bytes: int
    seconds: float


def take_backup(target: Target, progress: Progress = _quiet) -> BackupReport:
    """Write one snapshot of the studio to `target`, which must be empty; remove it if anything fails."""
    if not target.is_empty():
        raise FileExistsError(f"{target.description} is not empty: a snapshot goes into a new folder")
    started = time.monotonic()
    tell = _Throttled(progress)
    with nothing_written_on_failure(target):
        tables, migrations, rows = _dump_database(target, tell)
        media, media_files, media_bytes = _copy_media(target, tell)
        body = {
            "format": FORMAT,
            "app_version": app_version(),
            "created": datetime.datetime.now(datetime.UTC).isoformat(),
            "database_vendor": connections["default"].vendor,
            "migrations": migrations,
            "tables": tables,
            "media": {"files": media_files, "bytes": media_bytes, "index": media},
        }
        target.write(MANIFEST, [sealed(body)])
    seconds = time.monotonic() - started
    tell(1.0, f"snapshot written to {target.description}", force=True)
    return BackupReport(len(tables), rows, media_files, media_bytes, seconds)


def _dump_database(target: Target, tell: _Throttled) -> tuple[list[dict[str, Any]], list[str], int]:
    tables: list[dict[str, Any]] = []
    with consistent_database() as alias:
        migrations = applied_migrations(alias)
        chosen = backed_up_models()
        counts = {model: model._base_manager.using(alias).count() for model in chosen}
        total = max(1, sum(counts.values()))
        done = 0
        for model in chosen:
            label = model._meta.label_lower
            counted = [0]

            def report(rows: int, label: str = label, before: int = done) -> None:
                tell((before + rows) / total * 0.5, f"database: {label}: {rows:,} rows")

            written = target.write(f"database/{label}.jsonl", _table_lines(model, alias, counted, report))
            done += counted[0]
            if counted[0]:
                tell(done / total * 0.5, f"database: {label}: {counted[0]:,} rows", force=True)
            tables.append(
                {
                    "model": label,
                    "table": model._meta.db_table,
                    "columns": [field.attname for field in columns(model)],
                    "rows": counted[0],
                    "size": written.size,
                    "sha256": written.sha256,
                }
            )
    tell(0.5, f"database: {len(tables)} tables, {done:,} rows", force=True)
    return tables, migrations, done


def _copy_media(target: Target, tell: _Throttled) -> tuple[dict[str, Any], int, int]:
    totals = [0, 0]

    def index_lines() -> Iterator[bytes]:
        for key in media_keys(default_storage):
            written = target.write(f"media/{key}", read_chunks(default_storage.open(key, "rb")))
            totals[0] += 1
            totals[1] += written.size
            tell(None, f"media: {totals[0]:,} files, {totals[1] / 1e6:,.1f} MB")
            yield row_line([key, written.size, written.sha256])

    index = target.write(MEDIA_INDEX, index_lines())
    tell(0.99, f"media: {totals[0]:,} files, {totals[1] / 1e6:,.1f} MB", force=True)
    return {"size": index.size, "sha256": index.sha256}, totals[0], totals[1]


# --- Restore -------------------------------------------------------------------------------------


def read_manifest(target: Target) -> dict[str, Any]:
    if not target.exists(MANIFEST):
        raise BadSnapshot(
            f"{target.description} holds no {MANIFEST}: not a snapshot, or a backup that did not finish"
        )
    with target.open(MANIFEST) as handle:
        return unsealed(handle.read())


def studio_is_empty() -> bool:
    """An empty studio has no user accounts and no media: every piece of work has an author."""
    return not get_user_model()._base_manager.exists() and next(media_keys(default_storage), None) is None


def _check_schema(manifest: dict[str, Any]) -> dict[str, type[models.Model]]:
    here = applied_migrations()
    there = manifest["migrations"]
    if here != there:
        missing, extra = sorted(set(there) - set(here)), sorted(set(here) - set(there))
        raise RestoreRefused(
            "the snapshot was taken at another schema: restore it with the EchoStudio version that made "
            f"it ({manifest.get('app_version')}), then migrate. Snapshot only: {missing[:5]}; "
            f"this studio only: {extra[:5]}"
        )
    by_label = {model._meta.label_lower: model for model in backed_up_models()}
    for table in manifest["tables"]:
        model = by_label.get(table["model"])
        if model is None or [field.attname for field in columns(model)] != table["columns"]:
            raise RestoreRefused(f"the snapshot's table {table['model']} does not match this studio's")
    return by_label


def _media_entries(target: Target, manifest: dict[str, Any]) -> Iterator[tuple[str, Written]]:
    index = manifest["media"]["index"]
    count = 0
    for line in lines(checked(target, MEDIA_INDEX, Written(index["size"], index["sha256"]))):
        try:
            key, size, sha256 = json.loads(line)
        except ValueError:
            raise BadSnapshot(f"{MEDIA_INDEX} has a damaged line") from None
        count += 1
        yield f"media/{key}", Written(int(size), str(sha256))
    if count != manifest["media"]["files"]:
        raise BadSnapshot(f"{MEDIA_INDEX} lists {count} files, the manifest {manifest['media']['files']}")


def _table_rows(target: Target, table: dict[str, Any]) -> Iterator[bytes]:
    name = f"database/{table['model']}.jsonl"
    count = 0
    for line in lines(checked(target, name, Written(table["size"], table["sha256"]))):
        count += 1
        yield line
    if count != table["rows"]:
        raise BadSnapshot(f"{name} holds {count} rows, the manifest {table['rows']}")


def verify_snapshot(target: Target, progress: Progress = _quiet) -> dict[str, Any]:
    """Read the whole snapshot and check every checksum, size and count; return its manifest."""
    tell = _Throttled(progress)
    manifest = read_manifest(target)
    total = sum(table["size"] for table in manifest["tables"]) + manifest["media"]["bytes"]
    done = 0
    for table in manifest["tables"]:
        for line in _table_rows(target, table):
            done += len(line) + 1
        tell(done / max(1, total), f"verified: {table['model']}")
    files = 0
    for name, written in _media_entries(target, manifest):
        for chunk in checked(target, name, written):
            done += len(chunk)
        files += 1
        tell(done / max(1, total), f"verified: {files:,} media files")
    tell(1.0, f"verified every checksum: {len(manifest['tables'])} tables, {files:,} media files", force=True)
    return manifest


@dataclass
class RestoreReport:
    tables: int
    rows: int
    media_files: int
    media_bytes: int
    seconds: float


def restore_snapshot(target: Target, progress: Progress = _quiet, replace: bool = False) -> RestoreReport:
    """Rebuild the studio from a snapshot: refused unless the studio is empty (or `replace`), and
    unless the whole snapshot checks out first."""
    started = time.monotonic()
    if not replace and not studio_is_empty():
        raise RestoreRefused(
            "this studio is not empty (it has users or media): restore into a fresh database and media "
            "storage, or pass --replace to overwrite it"
        )
    by_label = _check_schema(read_manifest(target))
    progress(0.0, "verifying the snapshot before anything is written")
    manifest = verify_snapshot(target, lambda fraction, message: progress((fraction or 0) * 0.4, message))
    tell = _Throttled(progress)
    files, size = _write_media(target, manifest, tell, replace)
    rows = _write_database(target, manifest, by_label, tell)
    for cache in caches.all():
        cache.clear()  # nothing the previous studio computed may be served from the restored one
    tell(1.0, f"restored {len(manifest['tables'])} tables, {rows:,} rows, {files:,} media files", force=True)
    return RestoreReport(len(manifest["tables"]), rows, files, size, time.monotonic() - started)


def _write_media(
    target: Target, manifest: dict[str, Any], tell: _Throttled, replace: bool
) -> tuple[int, int]:
    files = size = 0
    total = max(1, manifest["media"]["files"])
    for name, written in _media_entries(target, manifest):
        key = name[len("media/") :]
        if replace and default_storage.exists(key):
            default_storage.delete(key)
        with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024) as spool:
            for chunk in checked(target, name, written):
                spool.write(chunk)
            spool.seek(0)
            saved = default_storage.save(key, File(spool))
        if saved != key:
            raise RestoreRefused(f"media storage stored {key} as {saved}: it already held that key")
        files += 1
        size += written.size
        tell(0.4 + 0.3 * files / total, f"media: {files:,} of {total:,} files")
    return files, size


def _write_database(
    target: Target, manifest: dict[str, Any], by_label: dict[str, type[models.Model]], tell: _Throttled
) -> int:
    connection = connections["default"]
    total = max(1, sum(table["rows"] for table in manifest["tables"]))
    done = 0
    with transaction.atomic():
        # What `migrate` left (content types, permissions, seeded defaults) gives way to the snapshot's.
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        connection.ops.execute_sql_flush(
            connection.ops.sql_flush(no_style(), tables, reset_sequences=True, allow_cascade=True)
        )
        for table in manifest["tables"]:
            model = by_label[table["model"]]
            done += _insert_rows(model, _table_rows(target, table))
            if table["rows"]:
                tell(0.7 + 0.3 * done / total, f"database: {table['model']}: {table['rows']:,} rows")
        with connection.cursor() as cursor:
            for statement in connection.ops.sequence_reset_sql(no_style(), list(by_label.values())):
                cursor.execute(statement)
    from django.contrib.contenttypes.models import ContentType

    ContentType.objects.clear_cache()
    return done


def _insert_rows(model: type[models.Model], encoded: Iterator[bytes]) -> int:
    """Insert rows exactly as stored: raw, so no auto_now or default rewrites a value."""
    fields = columns(model)
    decoders = [(field.attname, _decoder(field)) for field in fields]
    batch_size = max(1, min(500, connections["default"].ops.bulk_batch_size(fields, [None] * 500)))
    inserted = 0
    batch: list[Any] = []

    def flush() -> None:
        model._base_manager.using("default")._insert(batch, fields=fields, raw=True, using="default")  # type: ignore[attr-defined]
        batch.clear()

    for line in encoded:
        values = json.loads(line)
        batch.append(
            SimpleNamespace(
                **{
                    name: (decode(value) if decode else value)
                    for (name, decode), value in zip(decoders, values, strict=True)
                }
            )
        )
        inserted += 1
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    return inserted


def scheduled_backup(now: datetime.datetime | None = None) -> str:
    """Write a snapshot into a new folder under BACKUP_TARGET, then keep only the newest BACKUP_KEEP
    (run by Celery beat when both are set); return the new snapshot's name."""
    root = target_for(settings.BACKUP_TARGET)
    name = snapshot_name(now or datetime.datetime.now(datetime.UTC))
    take_backup(root.child(name))
    names = root.children()
    complete = {child for child in names if root.child(child).exists(MANIFEST)}
    for old in snapshots_to_prune(names, complete, settings.BACKUP_KEEP):
        root.child(old).remove()
    return name
