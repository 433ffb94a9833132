"""Where a training job's records come from: completed annotations, or a finished build's export.

A build's export (``ml.builder.export``) is a records folder as the command line reads it. A job
started on it takes a ``DatasetSnapshot`` naming the build, one entry per record and the sha256
of ``records.jsonl``; the job reads the folder with ``ml.core.training_records.read_records``
and refuses it when the file has changed since (the build was re-exported, e.g. after more
spot-check fixes), so a job trains on what the admin started it on.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.db.models import QuerySet

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
    """Return the finished builds with an export, newest first."""
    return (
        Build.objects.filter(status=BuildStatus.SUCCEEDED, exported_at__isnull=False)
        .exclude(export_path="")
        .order_by("-exported_at", "-pk")
    )


def build_choice_value(build: Build) -> str:
    """Return the form value naming a build as the data source."""
    return f"{BUILD_PREFIX}{build.pk}"


def source_choices() -> list[tuple[str, str]]:
    """Return the data sources a training form offers: annotations, then every exported build."""
    choices = [(ANNOTATIONS, "Completed annotations (the splits below)")]
    for build in exported_builds():
        exported = build.exported_at.strftime("%Y-%m-%d %H:%M") if build.exported_at else ""
        choices.append((build_choice_value(build), f"Build #{build.pk} {build.name} (exported {exported})"))
    return choices


def chosen_build(value: str) -> Build | None:
    """Return the exported build a source value names, None for annotations (or an unknown value)."""
    if not value.startswith(BUILD_PREFIX):
        return None
    number = value.removeprefix(BUILD_PREFIX)
    return exported_builds().filter(pk=int(number)).first() if number.isdigit() else None


def records_file(build: Build) -> Path:
    """Return the build's exported records file."""
    return Path(build.export_path) / RECORDS_FILE


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
    path = records_file(build)
    if not build.exported_at or not path.is_file():
        raise BuildNotReady(f"Build #{build.pk} has no export to train on (export it first).")
    with path.open(encoding="utf-8") as handle:
        entries = [{"external_id": json.loads(line)["item_id"]} for line in handle if line.strip()]
    if not entries:
        raise BuildNotReady(f"Build #{build.pk}'s export holds no records.")
    return DatasetSnapshot.objects.create(
        purpose=purpose, build=build, splits=[], entries=entries, content_hash=_file_hash(path)
    )


def build_records(snapshot: DatasetSnapshot) -> list[RecordAudio]:
    """Return the records of a build snapshot with their audio, as the export wrote them."""
    assert snapshot.build is not None, "only a build snapshot reads a build's export"
    path = records_file(snapshot.build)
    if not path.is_file() or _file_hash(path) != snapshot.content_hash:
        raise ExportChanged(
            f"snapshot #{snapshot.pk}: build #{snapshot.build_id}'s export at {path.parent} is missing or "
            "was rewritten since the job started; start the job again on the current export"
        )
    return read_records(path)
