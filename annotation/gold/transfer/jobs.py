"""Gold export and import as jobs on the `default` queue, for the gold page (the commands call gold_io).

An export job writes the export folder (gold.jsonl + audio/, data/*.parquet + README.md) into a
zip archive in media storage; the gold page offers it for download. An import job reads an
uploaded archive (or a bare .jsonl / .parquet file) and imports it all or nothing.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from annotation.gold.datasheet import Release
from annotation.gold.export import export_gold
from annotation.gold.importing import GoldImportError, import_gold
from annotation.recording.consent.models import TakeUse, record_uses
from webapp.jobs import JobReporter, start_job
from webapp.lib.archives import UnpackBudget, UnpackLimits, check_listing, member_chunks
from webapp.lib.row_outcome import RESULT_KEY, RowTally
from webapp.models import Job, JobStatus, User

EXPORT_KIND = "export_gold"
IMPORT_KIND = "import_gold"
UPLOAD_SUFFIXES = (".zip", ".jsonl", ".parquet")
MAX_ARCHIVE_MEMBERS = 200_000
CHUNK_BYTES = 2**20


class UploadRefused(ValueError):
    """The uploaded file cannot be an export (its message says why)."""


def start_export(
    *, started_by: User, scenario: str = "", split: str = "", release: Release | None = None
) -> Job:
    """Queue an export of the current gold references (optionally of one scenario or split); with
    `release`, an export for publication (public-release consent only, with its datasheet)."""
    parameters: dict[str, Any] = {"scenario": scenario, "split": split}
    if release is not None:
        parameters["release"] = {"licence": release.licence, "motivation": release.motivation}
    return start_job(EXPORT_KIND, started_by=started_by, parameters=parameters)


def run_export(job: Job, reporter: JobReporter) -> dict[str, Any]:
    """Write the export into a zip archive in media storage; the result names its key."""
    reporter.progress(0.0, "Exporting gold references", force=True)
    release = Release(**job.parameters["release"]) if job.parameters.get("release") else None
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "export"
        summary = export_gold(
            folder,
            scenario=job.parameters.get("scenario") or None,
            split=job.parameters.get("split") or None,
            # Cut for its maker, the only one who may download it (`gold.access.export_refusal`).
            viewer=job.started_by,
            on_row=lambda done, total: reporter.progress(
                0.9 * done / max(1, total), f"{done} of {total} rows"
            ),
            release=release,
        )
        archive = Path(scratch) / "export.zip"
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    zipped.write(path, path.relative_to(folder).as_posix())
        reporter.progress(0.95, "Storing the archive")
        key = default_storage.save(f"exports/gold/{uuid.uuid4().hex}.zip", ContentFile(archive.read_bytes()))
    # The lineage manifest: which takes this export holds (what a withdrawal's report names).
    record_uses(TakeUse.GOLD_EXPORT, job.pk, summary.take_ids)
    # All or nothing: the archive holds every row or the job fails, so it succeeded with every row.
    return {
        RESULT_KEY: RowTally(summary.rows, 0).as_result(),
        "key": key,
        "release": release is not None,
        "takes": len(summary.take_ids),
    }


def record_direct_export(
    *, by: User | None, via: str, take_ids: Iterable[int], rows: int, parameters: dict[str, Any]
) -> Job:
    """Record an export made outside a job (the API's, `manage.py export_gold`) as a finished
    export, with its lineage manifest, so a withdrawal's report names it like the gold page's."""
    now = timezone.now()
    takes = list(take_ids)
    with transaction.atomic():
        job = Job.objects.create(
            kind=EXPORT_KIND,
            status=JobStatus.SUCCEEDED,
            progress=1.0,
            started_by=by,
            parameters={**parameters, "via": via},
            result={RESULT_KEY: RowTally(rows, 0).as_result(), "takes": len(set(takes)), "via": via},
            message=f"Exported {rows} rows ({via}); no archive is kept here",
            started_at=now,
            finished_at=now,
        )
        record_uses(TakeUse.GOLD_EXPORT, job.pk, takes)
    return job


def start_import(*, started_by: User, name: str, data: bytes | File) -> Job:
    """Store an uploaded export (streamed to storage in chunks) and queue its import; refuse files
    that cannot be one."""
    suffix = PurePosixPath(name.lower()).suffix
    if suffix not in UPLOAD_SUFFIXES:
        raise UploadRefused(f"Upload a .zip of an export folder, a .jsonl or a .parquet file (got {name!r}).")
    upload = ContentFile(data) if isinstance(data, bytes) else data
    if not upload.size:
        raise UploadRefused("The file is empty.")
    key = default_storage.save(f"imports/gold/{uuid.uuid4().hex}{suffix}", upload)
    return start_job(IMPORT_KIND, started_by=started_by, parameters={"key": key, "name": name})


def run_import(job: Job, reporter: JobReporter) -> dict[str, Any]:
    """Import the uploaded file; every problem is listed in the job's error when nothing was imported."""
    if job.started_by is None:
        raise ValueError("an import needs the user who started it (they stand in as the actor of new audio)")
    key = str(job.parameters["key"])
    reporter.progress(0.0, "Reading the upload", force=True)
    with tempfile.TemporaryDirectory() as scratch, default_storage.open(key, "rb") as handle:
        upload = Path(scratch) / PurePosixPath(key).name
        with upload.open("wb") as copy:
            shutil.copyfileobj(handle, copy, CHUNK_BYTES)
        target = _unpacked(upload, Path(scratch) / "export") if upload.suffix == ".zip" else upload
        reporter.progress(0.2, "Checking and importing rows")
        try:
            summary = import_gold(target, imported_by=job.started_by)
        except GoldImportError as error:
            for problem in error.problems[:200]:
                reporter.log(str(problem))
            raise
    # All or nothing: one row with a problem refuses the file (the job fails with every problem
    # listed, nothing written), so an import that returns succeeded with every row (docs/jobs.md).
    # Annotations of annotators unknown here are skipped by design, counted, and not failed rows.
    return {
        RESULT_KEY: RowTally(summary.rows, 0).as_result(),
        "items_created": summary.items_created,
        "gold_created": summary.gold_created,
        "annotations_imported": summary.annotations_imported,
        "annotations_skipped": summary.annotations_skipped,
        "unknown_annotators": sorted(summary.unknown_annotators),
    }


def _unpacked(archive: Path, folder: Path) -> Path:
    """Extract an export archive, refusing what no export holds: members outside the folder, links,
    repeated names, too many files or bytes, a zip bomb's expansion (all checked on the listing
    before anything is written, and the bytes again as they come out, since a zip's sizes may lie:
    webapp.lib.archives), or a file that is not a zip at all."""
    folder.mkdir()
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [member for member in zipped.infolist() if not member.is_dir()]
            check_listing(members, unpack_limits(), archive.stat().st_size)
            _refuse_hostile_members(members, folder)
            budget = UnpackBudget(unpack_limits())
            for member in members:
                destination = folder / member.filename
                destination.parent.mkdir(parents=True, exist_ok=True)
                with destination.open("wb") as copy:
                    for chunk in member_chunks(zipped, member, budget, CHUNK_BYTES):
                        copy.write(chunk)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error) as error:
        raise ValueError(f"the upload is not a readable zip archive ({error})") from None
    return folder


def unpack_limits() -> UnpackLimits:
    """Return the caps on unpacking one gold import."""
    return UnpackLimits(
        max_members=MAX_ARCHIVE_MEMBERS,
        max_bytes=int(settings.GOLD_IMPORT_MAX_BYTES),
        max_ratio=float(settings.ARCHIVE_MAX_RATIO),
    )


def _refuse_hostile_members(members: list[zipfile.ZipInfo], folder: Path) -> None:
    names: set[str] = set()
    for member in members:
        destination = (folder / member.filename).resolve()
        if folder.resolve() not in destination.parents:
            raise ValueError(f"archive member {member.filename!r} points outside the export folder")
        if member.filename.casefold() in names:
            raise ValueError(f"archive member {member.filename!r} appears twice")
        names.add(member.filename.casefold())


def archive_of(job: Job) -> str | None:
    """Return the storage key of a finished export job's archive, if it still exists."""
    if job.kind != EXPORT_KIND or job.status != JobStatus.SUCCEEDED or not job.result:
        return None
    key = job.result.get("key")
    return key if isinstance(key, str) and default_storage.exists(key) else None
