"""Loading a speech LM from a local folder or an ``s3://bucket/prefix`` URI.

Weights come from a local directory or an S3 prefix (downloaded once with boto3 into a cache
directory, ``ECHOSTUDIO_MODEL_CACHE``); never from a model hub. The adapter is chosen by the
``model_type`` of the checkpoint's config.json (``ml.core.speech.adapters``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from ml.core.config import LoraSettings
from ml.core.speech.adapters import adapter_for_model_type
from ml.core.speech.model import SpeechLM


def split_s3_uri(uri: str) -> tuple[str, str]:
    """Return (bucket, key prefix) of ``s3://bucket/prefix``."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri}")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    if not bucket:
        raise ValueError(f"s3 URI has no bucket: {uri}")
    return bucket, prefix.strip("/")


def default_cache_dir() -> Path:
    """Return where S3 model copies are kept (``ECHOSTUDIO_MODEL_CACHE`` or ~/.cache/echostudio)."""
    configured = os.environ.get("ECHOSTUDIO_MODEL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "echostudio" / "models"


def download_s3_prefix(uri: str, destination: Path, client: Any = None) -> Path:
    """Copy every object under an S3 prefix into ``destination``; objects already there with the
    same size are skipped, so a second load costs one listing."""
    import boto3

    bucket, prefix = split_s3_uri(uri)
    s3 = client if client is not None else boto3.client("s3")
    listing_prefix = f"{prefix}/" if prefix else ""
    found = False
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=listing_prefix):
        for entry in page.get("Contents", []):
            key: str = entry["Key"]
            relative = key[len(listing_prefix) :]
            if not relative or relative.endswith("/"):
                continue
            found = True
            local = destination / relative
            if local.exists() and local.stat().st_size == entry["Size"]:
                continue
            local.parent.mkdir(parents=True, exist_ok=True)
            partial = local.with_name(local.name + ".partial")
            s3.download_file(bucket, key, str(partial))
            partial.replace(local)
    if not found:
        raise FileNotFoundError(f"nothing stored under {uri}")
    return destination


def resolve_model_path(path_or_uri: str | Path, cache_dir: Path | None = None) -> Path:
    """Return a local directory for a local path or an ``s3://`` URI (downloaded into the cache)."""
    text = str(path_or_uri)
    if text.startswith("s3://"):
        bucket, prefix = split_s3_uri(text)
        destination = (cache_dir or default_cache_dir()) / bucket / prefix
        return download_s3_prefix(text, destination)
    path = Path(text)
    if not path.is_dir():
        raise FileNotFoundError(f"model directory not found: {path}")
    return path


def _resolve_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    resolved = getattr(torch, dtype, None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return resolved


def load_speech_lm(
    path_or_uri: str | Path,
    device: torch.device | str = "cpu",
    dtype: torch.dtype | str = torch.float32,
    lora: LoraSettings | None = None,
    gradient_checkpointing: bool = False,
    cache_dir: Path | None = None,
    attn_implementation: str = "sdpa",
) -> SpeechLM:
    """Return the speech LM stored at a local directory or S3 prefix, ready to train or generate.

    The adapter is chosen from config.json's ``model_type``. ``lora`` wraps the model with new
    LoRA adapters; ``gradient_checkpointing`` recomputes decoder activations in backward.
    """
    local = resolve_model_path(path_or_uri, cache_dir)
    config = json.loads((local / "config.json").read_text())
    adapter = adapter_for_model_type(config["model_type"])
    speech_lm = adapter.from_local_path(local, device, _resolve_dtype(dtype), attn_implementation)
    if gradient_checkpointing:
        speech_lm.enable_gradient_checkpointing()
    if lora is not None:
        speech_lm.apply_lora(lora)
    return speech_lm
