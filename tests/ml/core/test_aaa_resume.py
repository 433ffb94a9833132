"""Resuming AAA from an AAA checkpoint keeps the original target rho* (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ml.core.config import SftConfig
from ml.core.runtime import AAA_TARGET_KEY, StartModel, load_start_model, save_trained_model
from ml.core.sft import train_sft
from ml.core.speech.tiny import build_tiny_speech_lm
from tests.ml.core.test_sft_pipeline import examples

CONFIG = SftConfig(max_steps=2, batch_size=2, learning_rate=1e-2, lambda_aaa=0.1, aaa_target_ratio=2.0)


def test_a_run_resumed_from_an_aaa_checkpoint_keeps_the_original_target(tmp_path: Path) -> None:
    first = StartModel(build_tiny_speech_lm("qwen2_audio", seed=0), adapter_base=None, source="tiny")
    first_result = train_sft(first.speech_lm, examples(2), CONFIG)
    original = first_result.history[0][AAA_TARGET_KEY]
    save_trained_model(first, tmp_path / "aaa", CONFIG.to_dict(), [], first_result.last_metrics())

    metadata = json.loads((tmp_path / "aaa" / "metadata.json").read_text())
    resumed = load_start_model(str(tmp_path / "aaa"), "cpu", "float32")
    result = train_sft(resumed.speech_lm, examples(2), CONFIG, aaa_target=resumed.aaa_target)

    assert metadata["extra"][AAA_TARGET_KEY] == pytest.approx(original)
    assert resumed.aaa_target == pytest.approx(original)
    assert [step[AAA_TARGET_KEY] for step in result.history] == pytest.approx([original, original])

    # What a resumed run did before: target 2 x the rho the first run already raised.
    retargeted = load_start_model(str(tmp_path / "aaa"), "cpu", "float32")
    fresh = train_sft(retargeted.speech_lm, examples(2), CONFIG)
    assert fresh.history[0][AAA_TARGET_KEY] != pytest.approx(original, rel=1e-3)


def test_a_checkpoint_of_a_run_that_carried_a_target_passes_it_on(tmp_path: Path) -> None:
    # A plain-SFT or RL run from an AAA checkpoint sets no target of its own; it keeps the start's.
    start = StartModel(
        build_tiny_speech_lm("qwen2_audio", seed=0), adapter_base=None, source="tiny", aaa_target=0.4
    )
    save_trained_model(start, tmp_path / "next", {}, [], {"loss": 1.0, AAA_TARGET_KEY: float("nan")})

    assert load_start_model(str(tmp_path / "next"), "cpu", "float32").aaa_target == pytest.approx(0.4)
