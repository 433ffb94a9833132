"""Saving and loading a reward model as a checkpoint directory (layout of ``ml.core.checkpoints``).

config.json (with ``model_type``), model.safetensors, the tokenizer files, and metadata.json
written last.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ml.core.checkpoints import (
    CheckpointMetadata,
    SavedCheckpoint,
    read_metadata,
    verify_checkpoint,
    write_checkpoint,
)
from ml.core.config import RewardModelConfig
from ml.core.reward.model import RewardModel
from ml.core.speech.loading import resolve_model_path

REWARD_MODEL_TYPE = "echochat_reward_model"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


@dataclass
class LoadedRewardModel:
    model: RewardModel
    metadata: CheckpointMetadata
    local_path: Path


def save_reward_model(
    model: RewardModel,
    destination: str | Path,
    training_config: Mapping[str, Any] | None = None,
    dataset_snapshot_ids: Sequence[str] = (),
    metrics: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> SavedCheckpoint:
    """Write the model to a local directory or an ``s3://`` prefix (metadata.json last); return where."""
    from safetensors.torch import save_file

    def write_files(local: Path) -> None:
        (local / CONFIG_FILE).write_text(
            json.dumps({"model_type": REWARD_MODEL_TYPE, **model.config.to_dict()}, indent=2)
        )
        state = {name: tensor.detach().cpu().contiguous() for name, tensor in model.state_dict().items()}
        save_file(state, str(local / WEIGHTS_FILE))
        model.tokenizer.save_pretrained(local)

    return write_checkpoint(
        destination, write_files, REWARD_MODEL_TYPE, training_config, dataset_snapshot_ids, metrics, extra
    )


def load_reward_model(
    path_or_uri: str | Path,
    device: torch.device | str = "cpu",
    verify: bool = False,
    cache_dir: Path | None = None,
) -> LoadedRewardModel:
    """Return the reward model saved at a local directory or ``s3://`` prefix, in evaluation mode."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    local = resolve_model_path(path_or_uri, cache_dir)
    metadata = read_metadata(local)
    if verify:
        verify_checkpoint(local, metadata)
    stored = json.loads((local / CONFIG_FILE).read_text())
    if stored.get("model_type") != REWARD_MODEL_TYPE:
        raise ValueError(f"{local} is not a reward model (model_type {stored.get('model_type')!r})")
    model = RewardModel(RewardModelConfig.from_dict(stored), AutoTokenizer.from_pretrained(local))
    model.load_state_dict(load_file(str(local / WEIGHTS_FILE)))
    model.to(device)
    model.eval()
    return LoadedRewardModel(model=model, metadata=metadata, local_path=local)
