"""Checkpoint directories: weights, preprocessing files and a metadata.json that says where they came from.

Layout of a checkpoint directory (local, or mirrored under an ``s3://bucket/prefix``)::

    config.json + model*.safetensors      full model (no LoRA, or LoRA merged), or
    adapter_config.json + adapter_model.safetensors   LoRA adapter; metadata names the base model
    tokenizer / processor / preprocessor files
    metadata.json                          written last: its presence marks a complete checkpoint

metadata.json holds the training config, the dataset snapshot ids, the metrics, ``created_at``
(UTC ISO 8601), the sha256 of every weight file so a copy can be verified, and ``provenance``:
the project commit and the torch, transformers and peft versions that wrote it
(webapp.lib.provenance; empty in checkpoints written before it was recorded).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from ml.core.config import LoraSettings
from ml.core.speech.adapters import adapter_for_model_type
from ml.core.speech.loading import load_speech_lm, resolve_model_path, split_s3_uri
from ml.core.speech.model import SpeechLM
from webapp.lib.provenance import current_provenance

METADATA_FILE = "metadata.json"
ADAPTER_CONFIG_FILE = "adapter_config.json"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
FORMAT_VERSION = 1


@dataclass(frozen=True)
class CheckpointMetadata:
    arch: str
    created_at: str
    config: dict[str, Any]
    dataset_snapshot_ids: list[str]
    metrics: dict[str, Any]
    weight_sha256: dict[str, str]
    # For a LoRA adapter checkpoint: where the base model lives, and the LoRA settings.
    base_model: str | None = None
    lora: dict[str, Any] | None = None
    format_version: int = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        """Return the metadata as indented JSON."""
        return json.dumps(asdict(self), indent=2, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str) -> CheckpointMetadata:
        """Return metadata parsed from ``to_json`` output."""
        return cls(**json.loads(text))


@dataclass(frozen=True)
class SavedCheckpoint:
    local_path: Path
    uri: str
    metadata: CheckpointMetadata


@dataclass
class LoadedCheckpoint:
    speech_lm: SpeechLM
    metadata: CheckpointMetadata
    local_path: Path


def sha256_file(path: Path) -> str:
    """Return the hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weight_checksums(directory: Path) -> dict[str, str]:
    """Return {relative path: sha256} for the weight files in a directory."""
    return {
        str(path.relative_to(directory)): sha256_file(path)
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.suffix in _WEIGHT_SUFFIXES
    }


def save_checkpoint(
    speech_lm: SpeechLM,
    destination: str | Path,
    config: Mapping[str, Any],
    dataset_snapshot_ids: Sequence[str] = (),
    metrics: Mapping[str, Any] | None = None,
    base_model: str | None = None,
    merge_lora: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> SavedCheckpoint:
    """Write a checkpoint to a local directory or an ``s3://`` prefix and return where it went.

    With LoRA applied, only the adapter is saved unless ``merge_lora`` folds it into the weights
    (the model is then plain again); an adapter checkpoint needs ``base_model``, the path or URI
    its base weights load from.
    """
    lora = speech_lm.lora
    if lora is not None and not merge_lora and base_model is None:
        raise ValueError("a LoRA adapter checkpoint needs base_model (path or URI of the base weights)")
    if merge_lora:
        speech_lm.merged_model()
        lora = None
    return write_checkpoint(
        destination,
        speech_lm.save_pretrained,
        speech_lm.arch,
        config,
        dataset_snapshot_ids,
        metrics,
        extra,
        base_model=base_model if lora is not None else None,
        lora=lora,
    )


def _json_ready(values: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(json.loads(json.dumps(dict(values or {}), default=str)))


def write_checkpoint(
    destination: str | Path,
    write_files: Callable[[Path], None],
    arch: str,
    config: Mapping[str, Any] | None,
    dataset_snapshot_ids: Sequence[str] = (),
    metrics: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    base_model: str | None = None,
    lora: LoraSettings | None = None,
) -> SavedCheckpoint:
    """Write any model's checkpoint to a local directory or an ``s3://`` prefix; return where it went.

    ``write_files(directory)`` writes the weights and preprocessing files; metadata.json, with
    their checksums, is written after them, and an ``s3://`` destination is staged in a temporary
    directory and uploaded (metadata.json last).
    """
    target = str(destination)
    uploading = target.startswith("s3://")
    local = Path(tempfile.mkdtemp(prefix="echochat-ckpt-")) if uploading else Path(target)
    local.mkdir(parents=True, exist_ok=True)
    write_files(local)
    metadata = CheckpointMetadata(
        arch=arch,
        created_at=datetime.now(UTC).isoformat(),
        config=_json_ready(config),
        dataset_snapshot_ids=[str(snapshot) for snapshot in dataset_snapshot_ids],
        metrics=_json_ready(metrics),
        weight_sha256=weight_checksums(local),
        base_model=base_model,
        lora=lora.to_dict() if lora is not None else None,
        extra=dict(extra or {}),
        provenance=current_provenance(),
    )
    (local / METADATA_FILE).write_text(metadata.to_json())
    if uploading:
        try:
            upload_directory(local, target)
        finally:
            shutil.rmtree(local, ignore_errors=True)
    return SavedCheckpoint(local_path=local, uri=target, metadata=metadata)


def upload_directory(local: Path, uri: str, client: Any = None) -> None:
    """Upload every file of ``local`` under an S3 prefix, metadata.json last."""
    import boto3

    bucket, prefix = split_s3_uri(uri)
    s3 = client if client is not None else boto3.client("s3")
    files = sorted(path for path in local.rglob("*") if path.is_file())
    # Readers treat metadata.json as "checkpoint complete", so it must land after the weights.
    files.sort(key=lambda path: path.name == METADATA_FILE)
    for path in files:
        key = "/".join(part for part in (prefix, str(path.relative_to(local))) if part)
        s3.upload_file(str(path), bucket, key)


def base_model_metadata(directory: Path) -> CheckpointMetadata:
    """Return the metadata of a raw base model folder (a transformers checkpoint, no metadata.json
    of ours): its arch, from config.json's ``model_type`` (a type no adapter loads is refused),
    and the sha256 of its weight files. Nothing is written into the folder: a folder with
    metadata.json would be read as a checkpoint of ours and re-hashed on every load."""
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{directory} has no config.json: not a base model folder")
    model_type = str(json.loads(config_path.read_text()).get("model_type", ""))
    arch = adapter_for_model_type(model_type).arch
    weights = weight_checksums(directory)
    if not weights:
        raise ValueError(f"{directory} holds no weight files ({', '.join(_WEIGHT_SUFFIXES)})")
    return CheckpointMetadata(
        arch=arch,
        created_at=datetime.now(UTC).isoformat(),
        config={"model_type": model_type},
        dataset_snapshot_ids=[],
        metrics={},
        weight_sha256=weights,
        extra={"base_model_folder": True},
        provenance=current_provenance(),
    )


def read_metadata(directory: Path) -> CheckpointMetadata:
    """Return a checkpoint directory's metadata."""
    metadata_path = directory / METADATA_FILE
    if not metadata_path.is_file():
        raise FileNotFoundError(f"{directory} has no {METADATA_FILE}: not a complete checkpoint")
    return CheckpointMetadata.from_json(metadata_path.read_text())


def verify_checkpoint(directory: Path, metadata: CheckpointMetadata) -> None:
    """Raise ValueError when a weight file's sha256 differs from the metadata's."""
    actual = weight_checksums(directory)
    if actual != metadata.weight_sha256:
        changed = sorted(set(actual.items()) ^ set(metadata.weight_sha256.items()))
        raise ValueError(f"checkpoint weights differ from metadata.json: {changed}")


def load_checkpoint(
    path_or_uri: str | Path,
    device: torch.device | str = "cpu",
    dtype: torch.dtype | str = torch.float32,
    trainable: bool = False,
    gradient_checkpointing: bool = False,
    verify: bool = False,
    cache_dir: Path | None = None,
) -> LoadedCheckpoint:
    """Return the speech LM of a checkpoint with its metadata.

    Adapter checkpoints load their base model (from metadata) and attach the adapter, trainable
    when ``trainable``. ``verify`` re-hashes the weights against metadata.json first.
    """
    local = resolve_model_path(path_or_uri, cache_dir)
    metadata = read_metadata(local)
    if verify:
        verify_checkpoint(local, metadata)
    if not (local / ADAPTER_CONFIG_FILE).is_file():
        speech_lm = load_speech_lm(
            local,
            device=device,
            dtype=dtype,
            gradient_checkpointing=gradient_checkpointing,
            cache_dir=cache_dir,
        )
        return LoadedCheckpoint(speech_lm=speech_lm, metadata=metadata, local_path=local)

    from peft import PeftModel

    if metadata.base_model is None:
        raise ValueError(f"{local} holds a LoRA adapter but metadata.json names no base_model")
    speech_lm = load_speech_lm(
        metadata.base_model,
        device=device,
        dtype=dtype,
        gradient_checkpointing=gradient_checkpointing,
        cache_dir=cache_dir,
    )
    speech_lm.model = PeftModel.from_pretrained(speech_lm.model, local, is_trainable=trainable)
    speech_lm.lora = LoraSettings.from_dict(metadata.lora) if metadata.lora is not None else LoraSettings()
    return LoadedCheckpoint(speech_lm=speech_lm, metadata=metadata, local_path=local)
