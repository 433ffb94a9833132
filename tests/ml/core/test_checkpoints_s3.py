"""Checkpoints saved to and loaded from an s3:// prefix over a real S3-compatible HTTP server."""

from __future__ import annotations

from pathlib import Path

import torch

from ml.core.checkpoints import load_checkpoint, save_checkpoint
from ml.core.speech.inputs import SpeechExample
from ml.core.speech.model import SpeechLM
from tests.ml.core.samples import PROMPT, TARGET, voiced_audio
from tests.support.s3_server import S3Server


def test_a_checkpoint_round_trips_through_s3(
    tiny_qwen2_audio: SpeechLM, s3_server: S3Server, tmp_path: Path
) -> None:
    client = s3_server.client()
    client.create_bucket(Bucket="models")

    saved = save_checkpoint(tiny_qwen2_audio, "s3://models/echochat/sft-1", {"lr": 1e-5}, ["snapshot-3"])

    keys = {entry["Key"] for entry in client.list_objects_v2(Bucket="models")["Contents"]}
    assert "echochat/sft-1/metadata.json" in keys and "echochat/sft-1/model.safetensors" in keys
    assert saved.uri == "s3://models/echochat/sft-1"
    loaded = load_checkpoint("s3://models/echochat/sft-1", verify=True, cache_dir=tmp_path)
    assert loaded.metadata.dataset_snapshot_ids == ["snapshot-3"]
    batch = tiny_qwen2_audio.collate([SpeechExample(voiced_audio(0.5, seed=1), PROMPT, TARGET)])
    with torch.no_grad():
        assert torch.equal(loaded.speech_lm.forward(batch).logits, tiny_qwen2_audio.forward(batch).logits)
