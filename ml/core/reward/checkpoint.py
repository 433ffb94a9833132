"""Saving and loading a reward model as a checkpoint directory (layout of ``ml.core.checkpoints``).

config.json (``model_type`` echochat_reward_model and the ``RewardModelConfig``), heads.safetensors
(the two heads), backbone/ (the fine-tuned thinker as ``SpeechLM.save_pretrained`` writes it:
config.json, weights, tokenizer, feature extractor), and metadata.json written last.
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
from ml.core.speech.loading import load_speech_lm, resolve_model_path

REWARD_MODEL_TYPE = "echochat_reward_model"
CONFIG_FILE = "config.json"
HEADS_FILE = "heads.safetensors"
BACKBONE_DIR = "backbone"


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
        heads = {
            name: tensor.detach().cpu().contiguous()
            for name, tensor in model.state_dict().items()
            if not name.startswith(("backbone.", "speech_lm."))
        }
        save_file(heads, str(local / HEADS_FILE))
        model.speech_lm.save_pretrained(local / BACKBONE_DIR)

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

    local = resolve_model_path(path_or_uri, cache_dir)
    metadata = read_metadata(local)
    if verify:
        verify_checkpoint(local, metadata)
    stored = json.loads((local / CONFIG_FILE).read_text())
    if stored.get("model_type") != REWARD_MODEL_TYPE:
        raise ValueError(f"{local} is not a reward model (model_type {stored.get('model_type')!r})")
    backbone = load_speech_lm(local / BACKBONE_DIR, device=device)
    model = RewardModel(backbone, RewardModelConfig.from_dict(stored))
    missing, unexpected = model.load_state_dict(load_file(str(local / HEADS_FILE)), strict=False)
    if unexpected or any(not name.startswith(("backbone.", "speech_lm.")) for name in missing):
        raise ValueError(f"{local} holds heads that do not fit the reward model")
    model.to(device)
    model.eval()
    return LoadedRewardModel(model=model, metadata=metadata, local_path=local)
