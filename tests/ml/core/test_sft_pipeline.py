"""SFT with AAA end to end: train, checkpoint, reload, generate; progress and cancellation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from ml.core.checkpoints import load_checkpoint, save_checkpoint
from ml.core.config import LoraSettings, SftConfig
from ml.core.inference import InferenceItem, run_inference
from ml.core.sft import SftExample, train_sft
from ml.core.speech.inputs import SpeechExample
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import build_tiny_speech_lm
from tests.ml.core.samples import PERCEPTION, PROMPT, TARGET, voiced_audio


def examples(count: int, sample_rate: int = 16_000) -> list[SftExample]:
    seconds = 0.8
    return [
        SftExample(voiced_audio(seconds * sample_rate / 16_000, seed=index), sample_rate, PROMPT, TARGET)
        for index in range(count)
    ]


def test_progress_reports_every_step_and_metrics(tiny_qwen2_audio: SpeechLM) -> None:
    reports: list[tuple[float, str, dict[str, float]]] = []
    config = SftConfig(epochs=2, batch_size=2, learning_rate=1e-3, lambda_aaa=0.1, aaa_objective="log")

    result = train_sft(
        tiny_qwen2_audio, examples(3), config, on_progress=lambda *report: reports.append(report)
    )

    # 3 examples in batches of 2: two steps per epoch, the second with one example.
    assert result.steps_completed == result.total_steps == 4
    assert [fraction for fraction, _, _ in reports] == [0.25, 0.5, 0.75, 1.0]
    assert reports[-1][1] == "step 4/4"
    for entry in result.history:
        assert set(entry) == {"step", "loss", "ce", "aaa", "rho", "learning_rate"}
        assert entry["loss"] == pytest.approx(entry["ce"] + 0.1 * entry["aaa"], rel=1e-5)
        assert 0 < entry["rho"] < 1
        assert entry["aaa"] == pytest.approx(-math.log(entry["rho"] + 1e-6), rel=1e-3)


def test_plain_sft_has_no_aaa_loss_but_logs_rho_and_resamples_audio(tiny_qwen2_audio: SpeechLM) -> None:
    result = train_sft(
        tiny_qwen2_audio, examples(2, sample_rate=8000), SftConfig(max_steps=1, lambda_aaa=0.0)
    )

    entry = result.last_metrics()
    assert entry["loss"] == entry["ce"]
    assert math.isnan(entry["aaa"])
    # measured without a gradient, so Figure 5 can compare a plain run with an AAA run
    assert 0 < entry["rho"] < 1


def test_plain_sft_can_skip_measuring_rho(tiny_qwen2_audio: SpeechLM) -> None:
    config = SftConfig(max_steps=1, lambda_aaa=0.0, log_rho=False)
    entry = train_sft(tiny_qwen2_audio, examples(2), config).last_metrics()
    assert math.isnan(entry["rho"]) and math.isnan(entry["aaa"])


def test_the_target_objective_is_fixed_at_the_first_batch_and_bounded(tiny_qwen2_audio: SpeechLM) -> None:
    config = SftConfig(max_steps=3, batch_size=2, learning_rate=1e-3, lambda_aaa=0.1, aaa_target_ratio=2.0)
    assert config.aaa_objective == "target"

    history = train_sft(tiny_qwen2_audio, examples(2), config).history

    first = history[0]
    # the target is twice the first batch's rho, so the first hinge is 1 - rho / (2 rho) = 0.5
    assert first["aaa_target"] == pytest.approx(2.0 * first["rho"], rel=1e-6)
    assert first["aaa"] == pytest.approx(0.5, rel=1e-5)
    assert {entry["aaa_target"] for entry in history} == {first["aaa_target"]}
    for entry in history:
        assert entry["aaa"] == pytest.approx(max(0.0, 1.0 - entry["rho"] / entry["aaa_target"]), rel=1e-4)
        assert entry["loss"] == pytest.approx(entry["ce"] + 0.1 * entry["aaa"], rel=1e-5)


def test_sft_lora_trains_the_audio_encoder_with_the_adapters(tiny_qwen2_audio: SpeechLM) -> None:
    config = SftConfig(max_steps=1, lora=LoraSettings(rank=4, alpha=8, train_audio_encoder=True))
    train_sft(tiny_qwen2_audio, examples(2), config)
    trainable = {name for name, p in tiny_qwen2_audio.model.named_parameters() if p.requires_grad}

    assert any("audio_tower" in name for name in trainable)
    assert any("multi_modal_projector" in name for name in trainable)
    assert any("lora_" in name for name in trainable)
    # the LLM's own weights stay frozen under LoRA
    assert not any("language_model" in name and "lora_" not in name for name in trainable)


def test_cancel_stops_before_the_next_step(tiny_qwen2_audio: SpeechLM) -> None:
    done: list[float] = []

    result = train_sft(
        tiny_qwen2_audio,
        examples(2),
        SftConfig(max_steps=10, batch_size=1),
        on_progress=lambda fraction, message, metrics: done.append(fraction),
        should_cancel=lambda: len(done) >= 2,
    )

    assert result.cancelled
    assert result.steps_completed == 2


@pytest.mark.slow
def test_sft_checkpoint_reloads_and_generates_the_learned_format(tmp_path: Path) -> None:
    speech_lm = build_tiny_speech_lm("qwen2_audio", seed=0)
    # The objective this memorisation check was tuned with (the tiny model at lr 1e-2).
    config = SftConfig(
        max_steps=50, batch_size=2, learning_rate=1e-2, lambda_aaa=0.1, aaa_objective="log", aaa_layers=(-1,)
    )
    result = train_sft(speech_lm, examples(2), config)

    saved = save_checkpoint(
        speech_lm, tmp_path / "sft", config.to_dict(), ["snapshot-7"], result.last_metrics()
    )
    loaded = load_checkpoint(tmp_path / "sft", verify=True)
    outputs = run_inference(
        loaded.speech_lm,
        [InferenceItem("item-1", voiced_audio(0.8, seed=9), 16_000, PROMPT)],
        max_new_tokens=200,
    )

    assert result.history[-1]["ce"] < 0.2
    assert loaded.metadata.config["aaa_layers"] == [-1]
    assert loaded.metadata.dataset_snapshot_ids == ["snapshot-7"]
    assert saved.metadata.weight_sha256.keys() == {"model.safetensors"}
    [output] = outputs
    assert output.item_id == "item-1"
    assert output.parsed.well_formed, output.raw_text
    assert output.span_texts()["perception"] == PERCEPTION


def test_lora_checkpoint_saves_the_adapter_and_reloads_on_its_base(tmp_path: Path) -> None:
    base_dir = tmp_path / "base"
    build_tiny_speech_lm("qwen2_audio", seed=0).save_pretrained(base_dir)
    speech_lm = build_tiny_speech_lm("qwen2_audio", seed=0)
    lora = LoraSettings(rank=4, alpha=8, dropout=0.0)
    config = SftConfig(max_steps=2, batch_size=2, learning_rate=1e-2, lora=lora)
    train_sft(speech_lm, examples(2), config)

    saved = save_checkpoint(speech_lm, tmp_path / "lora", config.to_dict(), base_model=str(base_dir))
    loaded = load_checkpoint(tmp_path / "lora")

    assert (saved.local_path / "adapter_config.json").is_file()
    assert not (saved.local_path / "config.json").exists()
    assert loaded.metadata.lora == lora.to_dict()
    batch = speech_lm.build_inputs(voiced_audio(0.8), PROMPT, TARGET)
    with torch.no_grad():
        assert torch.allclose(
            loaded.speech_lm.forward(batch).logits, speech_lm.forward(batch).logits, atol=1e-5
        )


def test_inference_stops_when_cancelled(tiny_qwen2_audio: SpeechLM) -> None:
    items = [InferenceItem(f"item-{index}", voiced_audio(0.5), 16_000, PROMPT) for index in range(3)]
    progress: list[float] = []

    outputs = run_inference(
        tiny_qwen2_audio,
        items,
        max_new_tokens=3,
        on_progress=lambda fraction, message, metrics: progress.append(fraction),
        should_cancel=lambda: len(progress) >= 1,
    )

    assert [output.item_id for output in outputs] == ["item-0"]
    assert progress == [pytest.approx(1 / 3)]


def test_speech_examples_need_mono_audio_of_a_minimum_length(tiny_qwen2_audio: SpeechLM) -> None:
    with pytest.raises(ValueError, match="shorter"):
        tiny_qwen2_audio.collate([SpeechExample(voiced_audio(0.05), PROMPT)])
