"""Where a training job's records come from: completed annotations, or a finished build's export.

A build's export (``ml.builder.export``) is a records folder as the command line reads it, one
per export version (``ml.builder.export_versions``). A job started on a build takes a
``DatasetSnapshot`` naming the build's newest complete version, one entry per record and the
sha256 of ``records.jsonl``; the job reads that version's folder with
``ml.core.training_records.read_records`` and refuses it when the file has changed since, so a job
trains on what the admin started it on; later spot-check decisions go into a new version.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.db.models import QuerySet

from ml.builder.export_versions import BuildExport, latest_export
from ml.builder.models import Build, BuildStatus
from ml.core.training_records import RECORDS_FILE, RecordAudio, read_records
from ml.jobs.models import DatasetSnapshot

ANNOTATIONS = "annotations"
BUILD_PREFIX = "build:"
# The jobs that may train on a build (inference answers the benchmark's items, never a build).
BUILD_PURPOSES = frozenset(
    {DatasetSnapshot.Purpose.SFT, DatasetSnapshot.Purpose.RL, DatasetSnapshot.Purpose.REWARD}
)


class BuildNotReady(ValueError):
    """The build has no readable export, or an empty one; the message says which."""


class ExportChanged(RuntimeError):
    """The build's records file is not the one the snapshot was taken of."""


def exported_builds() -> QuerySet[Build]:
    """Return the finished builds with a complete export version, newest first."""
    return (
        Build.objects.filter(status=BuildStatus.SUCCEEDED, exports__finished_at__isnull=False)
        .distinct()
        .order_by("-exported_at", "-pk")
    )


def build_choice_value(build: Build) -> str:
    """Return the form value naming a build as the data source."""
    return f"{BUILD_PREFIX}{build.pk}"


def source_choices() -> list[tuple[str, str]]:
    """Return the data sources a training form offers: annotations, then every exported build."""
    choices = [(ANNOTATIONS, "Completed annotations (the splits below)")]
    for build in exported_builds():
        export = latest_export(build)
        assert export is not None and export.finished_at is not None, "exported_builds has one"
        written = export.finished_at.strftime("%Y-%m-%d %H:%M")
        choices.append(
            (build_choice_value(build), f"Build #{build.pk} {build.name}, export {export.label} ({written})")
        )
    return choices


def chosen_build(value: str) -> Build | None:
    """Return the exported build a source value names, None for annotations (or an unknown value)."""
    if not value.startswith(BUILD_PREFIX):
        return None
    number = value.removeprefix(BUILD_PREFIX)
    return exported_builds().filter(pk=int(number)).first() if number.isdigit() else None


def records_file(export: BuildExport) -> Path:
    """Return an export version's records file."""
    return Path(export.path) / RECORDS_FILE


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def create_build_snapshot(purpose: str, build: Build) -> DatasetSnapshot:
    """Freeze the build's exported records for a `purpose` job; raise BuildNotReady when unusable."""
    if purpose not in BUILD_PURPOSES:
        raise BuildNotReady(f"{DatasetSnapshot.Purpose(purpose).label} does not run on a build's records.")
    export = latest_export(build)
    if export is None or not records_file(export).is_file():
        raise BuildNotReady(f"Build #{build.pk} has no export to train on (export it first).")
    path = records_file(export)
    with path.open(encoding="utf-8") as handle:
        entries = [{"external_id": json.loads(line)["item_id"]} for line in handle if line.strip()]
    if not entries:
        raise BuildNotReady(f"Build #{build.pk}'s export {export.label} holds no records.")
    return DatasetSnapshot.objects.create(
        purpose=purpose,
        build=build,
        build_export=export,
        splits=[],
        entries=entries,
        content_hash=_file_hash(path),
    )


def build_records(snapshot: DatasetSnapshot) -> list[RecordAudio]:
    """Return the records of a build snapshot with their audio, as the export wrote them."""
    assert snapshot.build is not None, "only a build snapshot reads a build's export"
    export = snapshot.build_export
    # A snapshot taken before exports had versions read the build's one folder.
    path = records_file(export) if export else Path(snapshot.build.export_path) / RECORDS_FILE
    if not path.is_file() or _file_hash(path) != snapshot.content_hash:
        raise ExportChanged(
            f"snapshot #{snapshot.pk}: build #{snapshot.build_id}'s export {export.label if export else ''} "
            f"at {path.parent} is missing or "
            "was rewritten since the job started; start the job again on the current export"
        )
    return read_records(path)
