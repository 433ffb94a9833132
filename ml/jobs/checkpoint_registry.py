"""Where checkpoints go, how a job's checkpoint is saved, verified and recorded, and what a run starts from.

A job's checkpoint is written to ``<ECHOSTUDIO_CHECKPOINT_DIR>/<kind>/job-<id>-attempt-<n>`` (a
local folder or an ``s3://`` prefix), read back and checked against its metadata.json, and only
then recorded as a ``Checkpoint`` row. A save or check that fails removes the local folder and
fails the job, so a job that succeeded always has its checkpoint, and a row always points at a
complete one. Each attempt writes its own folder: a worker that died mid-save leaves an
incomplete folder (no metadata.json) that the next attempt does not trip over.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction

from ml.jobs.models import Checkpoint, DatasetSnapshot
from webapp.db import retry_transient
from webapp.jobs import JobLost, owned_by_attempt
from webapp.models import Job

if TYPE_CHECKING:
    from ml.core.checkpoints import CheckpointMetadata, SavedCheckpoint

# Job parameter values naming what a run starts from, besides a path or URI.
START_TINY = "tiny"
START_CHECKPOINT_PREFIX = "checkpoint:"
TINY_BASE_NAME = "tiny-demo-qwen2-audio"


class CheckpointNotVerified(RuntimeError):
    """What was saved does not read back as the checkpoint that was written."""


def checkpoint_root() -> str:
    """Return the configured checkpoint folder or s3:// prefix, without a trailing slash."""
    root = str(settings.CHECKPOINT_DIR)
    # settings keeps the value as a Path, which folds "s3://bucket" into "s3:/bucket".
    if root.startswith("s3:/") and not root.startswith("s3://"):
        root = "s3://" + root[len("s3:/") :]
    return root.rstrip("/")


def join_location(root: str, *parts: str) -> str:
    """Return a child location of a local folder or an s3:// prefix."""
    if root.startswith("s3://"):
        return "/".join([root.rstrip("/"), *parts])
    return str(Path(root).joinpath(*parts))


def job_destination(job: Job, kind: str) -> str:
    """Return where this attempt of the job writes its checkpoint."""
    return join_location(checkpoint_root(), kind, f"job-{job.pk}-attempt-{job.attempts}")


def default_checkpoint_name(job: Job, kind: str) -> str:
    """Return the name a job's checkpoint gets when the admin gave none."""
    return f"{kind}-job{job.pk}"


def start_choice_value(checkpoint: Checkpoint) -> str:
    """Return the job parameter value that starts a run from this checkpoint."""
    return f"{START_CHECKPOINT_PREFIX}{checkpoint.pk}"


def resolve_start(start_from: str) -> tuple[str, Checkpoint | None]:
    """Return (path or URI, checkpoint row or None) for a job's ``start_from`` parameter."""
    if start_from == START_TINY:
        tiny = ensure_tiny_base()
        return tiny.uri, tiny
    if start_from.startswith(START_CHECKPOINT_PREFIX):
        checkpoint = Checkpoint.objects.get(pk=int(start_from[len(START_CHECKPOINT_PREFIX) :]))
        return checkpoint.uri, checkpoint
    if not start_from:
        raise ValueError("no model to start from: set ECHOSTUDIO_BASE_MODEL or choose a checkpoint")
    return start_from, None


def ensure_tiny_base() -> Checkpoint:
    """Return the tiny demo base model's row, saving the model first when this is its first use.

    A LoRA checkpoint names the base weights it applies to, so even the demo's random base model
    must live on disk like a real one.
    """
    existing = Checkpoint.objects.filter(name=TINY_BASE_NAME).first()
    if existing is not None:
        return existing
    from ml.core.checkpoints import save_checkpoint
    from ml.core.speech.tiny import build_tiny_speech_lm

    # A folder of its own per build: two first uses at once must not write into each other's files.
    destination = join_location(
        checkpoint_root(), Checkpoint.Kind.BASE, f"{TINY_BASE_NAME}-{uuid.uuid4().hex[:8]}"
    )
    saved = _save_verified(
        destination,
        lambda target: save_checkpoint(
            build_tiny_speech_lm("qwen2_audio", seed=0),
            target,
            config={"tiny": True, "arch": "qwen2_audio", "seed": 0},
            extra={"note": "random weights for demos and tests"},
        ),
    )
    try:
        with transaction.atomic():
            return _create_row(
                TINY_BASE_NAME, Checkpoint.Kind.BASE, saved, job=None, snapshot=None, parent=None
            )
    except IntegrityError:
        # Another job built it at the same time and recorded its copy first.
        discard(destination)
        return Checkpoint.objects.get(name=TINY_BASE_NAME)


def store_checkpoint(
    job: Job,
    kind: str,
    name: str,
    save: Callable[[str], SavedCheckpoint],
    *,
    snapshot: DatasetSnapshot | None,
    parent: Checkpoint | None,
) -> Checkpoint:
    """Save a job's checkpoint with ``save(destination)``, verify it, and record it; clean up on failure.

    Returns the checkpoint the job recorded: this one, or one an earlier attempt of the job
    recorded first (this attempt's copy is then discarded).
    """
    destination = job_destination(job, kind)
    saved = _save_verified(destination, save)

    def record() -> Checkpoint:
        with transaction.atomic():
            # Race: a worker presumed dead (it was only slow) and the attempt that replaced it can
            # both get here; locking the job row makes the second see the first's checkpoint, so a
            # job never records two. (The same check at the job's start ran before training.)
            # An attempt that was reaped meanwhile records nothing: the attempt that owns the job does.
            if owned_by_attempt(job).select_for_update().only("pk").first() is None:
                raise JobLost(f"attempt {job.attempts} of job {job.pk} no longer owns it")
            recorded = Checkpoint.objects.filter(produced_by=job).first()
            if recorded is None:
                return _create_row(name, kind, saved, job=job, snapshot=snapshot, parent=parent)
            return recorded

    try:
        # Retried here, not by training again: a database restart at this moment must not cost the
        # run it just saved.
        checkpoint = retry_transient(record, what=f"job {job.pk}: recording its checkpoint")
    except BaseException:
        discard(destination)
        raise
    # A retry can find the row its own lost answer committed: those files are the checkpoint's.
    if checkpoint.uri != saved.uri:
        discard(destination)
    return checkpoint


def _save_verified(destination: str, save: Callable[[str], SavedCheckpoint]) -> SavedCheckpoint:
    try:
        saved = save(destination)
        verify_saved(saved.uri, saved.metadata)
    except BaseException:
        discard(destination)
        raise
    return saved


def _create_row(
    name: str,
    kind: str,
    saved: SavedCheckpoint,
    *,
    job: Job | None,
    snapshot: DatasetSnapshot | None,
    parent: Checkpoint | None,
) -> Checkpoint:
    metadata = saved.metadata
    return Checkpoint.objects.create(
        name=name,
        kind=kind,
        uri=saved.uri,
        arch=metadata.arch,
        base_model=metadata.base_model or "",
        metadata=_metadata_dict(metadata),
        parent=parent,
        produced_by=job,
        dataset_snapshot=snapshot,
    )


def _metadata_dict(metadata: CheckpointMetadata) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(metadata.to_json())
    return loaded


def verify_saved(uri: str, expected: CheckpointMetadata) -> None:
    """Raise CheckpointNotVerified unless ``uri`` holds the checkpoint described by ``expected``.

    A local folder is re-read and every weight file re-hashed; an S3 prefix is listed, and must
    hold metadata.json and every weight file the metadata names.
    """
    from ml.core.checkpoints import METADATA_FILE, read_metadata, verify_checkpoint

    if uri.startswith("s3://"):
        stored = _s3_names(uri)
        missing = sorted({METADATA_FILE, *expected.weight_sha256} - stored)
        if missing:
            raise CheckpointNotVerified(f"{uri} lacks {', '.join(missing)} after saving")
        return
    folder = Path(uri)
    try:
        written = read_metadata(folder)
        verify_checkpoint(folder, written)
    except (OSError, ValueError) as exc:
        raise CheckpointNotVerified(f"{uri} does not read back as a checkpoint: {exc}") from exc
    if written.weight_sha256 != expected.weight_sha256 or not written.weight_sha256:
        raise CheckpointNotVerified(f"{uri} holds other weights than the ones just saved")


def _s3_names(uri: str) -> set[str]:
    import boto3

    from ml.core.speech.loading import split_s3_uri

    bucket, prefix = split_s3_uri(uri)
    listing = f"{prefix}/" if prefix else ""
    names: set[str] = set()
    for page in boto3.client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=listing):
        names.update(entry["Key"][len(listing) :] for entry in page.get("Contents", []))
    return names


def discard(destination: str) -> None:
    """Remove a local checkpoint folder that must not be used (an S3 prefix without metadata.json
    is incomplete by definition and is left for the bucket's lifecycle rules)."""
    if not destination.startswith("s3://"):
        shutil.rmtree(destination, ignore_errors=True)


def register_checkpoint(uri: str, kind: str, name: str) -> Checkpoint:
    """Record a checkpoint made outside the app (e.g. by ``python -m ml.cli`` under torchrun),
    once its weights match its metadata.json (verified before the transaction: it may download).

    A base model (``kind`` base) may also be a raw transformers folder or ``s3://`` prefix without
    metadata.json: its metadata (arch, weight checksums) is made on registration and kept on the
    row, and every registered base is offered as a start by the training and inference forms.
    """
    from ml.core.checkpoints import METADATA_FILE, base_model_metadata, read_metadata, verify_checkpoint
    from ml.core.speech.loading import resolve_model_path

    local = resolve_model_path(uri)
    if kind == Checkpoint.Kind.BASE and not (local / METADATA_FILE).is_file():
        metadata = base_model_metadata(local)
    else:
        metadata = read_metadata(local)
        verify_checkpoint(local, metadata)
    snapshot_ids = [value for value in metadata.dataset_snapshot_ids if value.isdigit()]
    with transaction.atomic():
        # Race: two registrations under one name; the unique name fails the second inside this
        # transaction, and the snapshot is looked up in the same transaction that links it, so a
        # snapshot deleted meanwhile fails the insert instead of being linked half-way.
        snapshot = None
        if snapshot_ids:
            snapshot = DatasetSnapshot.objects.filter(pk=int(snapshot_ids[0])).first()
        return Checkpoint.objects.create(
            name=name,
            kind=kind,
            uri=uri,
            arch=metadata.arch,
            base_model=metadata.base_model or "",
            metadata=_metadata_dict(metadata),
            dataset_snapshot=snapshot,
        )
