"""Checkpoint metadata: checksums, integrity checks and the rules for adapter checkpoints."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ml.core.checkpoints import CheckpointMetadata, load_checkpoint, save_checkpoint, verify_checkpoint
from ml.core.config import LoraSettings
from ml.core.speech.model import SpeechLM
from webapp.lib.provenance import current_provenance


def test_metadata_records_config_data_metrics_and_weight_hashes(
    tiny_qwen2_audio: SpeechLM, tmp_path: Path
) -> None:
    saved = save_checkpoint(
        tiny_qwen2_audio,
        tmp_path,
        {"learning_rate": 1e-5, "device": "cpu"},
        ["snap-a", "snap-b"],
        {"ce": 1.5},
    )

    metadata = json.loads((tmp_path / "metadata.json").read_text())
    weights = (tmp_path / "model.safetensors").read_bytes()
    assert metadata["arch"] == "qwen2_audio"
    assert metadata["config"] == {"learning_rate": 1e-5, "device": "cpu"}
    assert metadata["dataset_snapshot_ids"] == ["snap-a", "snap-b"]
    assert metadata["metrics"] == {"ce": 1.5}
    assert metadata["weight_sha256"] == {"model.safetensors": hashlib.sha256(weights).hexdigest()}
    assert metadata["created_at"].endswith("+00:00")
    assert saved.uri == str(tmp_path)


def test_metadata_records_the_commit_and_library_versions_that_wrote_it(
    tiny_qwen2_audio: SpeechLM, tmp_path: Path
) -> None:
    saved = save_checkpoint(tiny_qwen2_audio, tmp_path, {})

    loaded = load_checkpoint(tmp_path)
    assert saved.metadata.provenance == current_provenance()
    assert loaded.metadata.provenance == current_provenance()
    assert set(loaded.metadata.provenance) == {"commit", "torch", "transformers", "peft"}


def test_metadata_written_before_provenance_was_recorded_still_reads() -> None:
    written_before = {
        "arch": "qwen2_audio",
        "created_at": "2025-01-01T00:00:00+00:00",
        "config": {},
        "dataset_snapshot_ids": [],
        "metrics": {},
        "weight_sha256": {},
    }

    assert CheckpointMetadata.from_json(json.dumps(written_before)).provenance == {}


def test_verification_rejects_changed_weights(tiny_qwen2_audio: SpeechLM, tmp_path: Path) -> None:
    saved = save_checkpoint(tiny_qwen2_audio, tmp_path, {})
    weights = tmp_path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))

    with pytest.raises(ValueError, match="differ"):
        verify_checkpoint(tmp_path, saved.metadata)
    with pytest.raises(ValueError, match="differ"):
        load_checkpoint(tmp_path, verify=True)


def test_a_directory_without_metadata_is_not_a_checkpoint(tiny_qwen2_audio: SpeechLM, tmp_path: Path) -> None:
    tiny_qwen2_audio.save_pretrained(tmp_path)

    with pytest.raises(FileNotFoundError, match=r"metadata\.json"):
        load_checkpoint(tmp_path)


def test_adapter_checkpoints_need_their_base_model(tiny_qwen2_audio: SpeechLM, tmp_path: Path) -> None:
    tiny_qwen2_audio.apply_lora(LoraSettings(rank=2, alpha=4))

    with pytest.raises(ValueError, match="base_model"):
        save_checkpoint(tiny_qwen2_audio, tmp_path, {})


def test_merging_lora_saves_a_plain_model(tiny_qwen2_audio: SpeechLM, tmp_path: Path) -> None:
    tiny_qwen2_audio.apply_lora(LoraSettings(rank=2, alpha=4))

    saved = save_checkpoint(tiny_qwen2_audio, tmp_path, {}, merge_lora=True)

    assert (tmp_path / "config.json").is_file()
    assert saved.metadata.lora is None and saved.metadata.base_model is None
    assert load_checkpoint(tmp_path).speech_lm.lora is None
