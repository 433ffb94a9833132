"""Acoustic-Anchored Attention: rho against eager attention maps, unchanged logits, gradients, training."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
import torch

from ml.core.aaa import aaa_loss, collect_audio_attention, measure_rho, perception_query_mask, target_rho
from ml.core.config import AaaObjective, SftConfig
from ml.core.sft import SftExample, train_sft
from ml.core.speech.inputs import SpeechBatch, SpeechExample
from ml.core.speech.model import SpeechLM
from ml.core.speech.tiny import build_tiny_speech_lm
from tests.ml.core.samples import PROMPT, TARGET, voiced_audio


def two_row_batch(speech_lm: SpeechLM) -> SpeechBatch:
    """Rows of different lengths, so the padded row goes through an explicit attention mask."""
    return speech_lm.collate(
        [
            SpeechExample(voiced_audio(1.0), PROMPT, TARGET),
            SpeechExample(voiced_audio(0.6, 120.0), "Hi", TARGET),
        ]
    )


def eager_rho(
    speech_lm: SpeechLM, batch: SpeechBatch, layers: Sequence[int], heads: Sequence[int] | None
) -> torch.Tensor:
    """Brute force: full attention maps from the eager implementation, averaged by hand."""
    query_mask = perception_query_mask(speech_lm, batch)
    audio_mask = speech_lm.audio_token_mask(batch.input_ids)
    speech_lm.base_model.set_attn_implementation("eager")  # type: ignore[operator]
    with torch.no_grad():
        attentions = speech_lm.forward(batch, output_attentions=True).attentions
    speech_lm.base_model.set_attn_implementation("sdpa")  # type: ignore[operator]
    assert attentions is not None
    rows = []
    for example in range(batch.input_ids.shape[0]):
        per_layer = []
        for layer in layers:
            maps = attentions[layer][example]
            maps = maps[list(heads)] if heads is not None else maps
            queries = maps[:, query_mask[example]]
            per_layer.append(queries[:, :, audio_mask[example]].sum(dim=-1).mean())
        rows.append(torch.stack(per_layer).mean())
    return torch.stack(rows)


@pytest.mark.parametrize("arch", ["qwen2_audio", "qwen2_5_omni_thinker"])
@pytest.mark.parametrize(("layers", "heads"), [(None, None), ([1], [0, 3])])
def test_rho_equals_the_eager_attention_average(
    arch: str, layers: list[int] | None, heads: list[int] | None
) -> None:
    speech_lm = build_tiny_speech_lm(arch, seed=1)
    batch = two_row_batch(speech_lm)

    measured = measure_rho(speech_lm, batch, layers, heads)

    expected = eager_rho(speech_lm, batch, layers or range(speech_lm.num_decoder_layers), heads)
    assert torch.allclose(measured, expected, atol=1e-5)
    assert ((measured > 0) & (measured < 1)).all()


def test_rho_without_padding_uses_the_implicit_causal_mask(tiny_qwen2_audio: SpeechLM) -> None:
    batch = tiny_qwen2_audio.build_inputs(voiced_audio(1.0), PROMPT, TARGET)

    measured = measure_rho(tiny_qwen2_audio, batch)

    assert torch.allclose(measured, eager_rho(tiny_qwen2_audio, batch, [0, 1], None), atol=1e-5)


def test_logits_are_identical_with_and_without_the_collector(tiny_qwen2_audio: SpeechLM) -> None:
    batch = two_row_batch(tiny_qwen2_audio)
    with torch.no_grad():
        plain = tiny_qwen2_audio.forward(batch).logits
        query_mask = perception_query_mask(tiny_qwen2_audio, batch)
        audio_mask = tiny_qwen2_audio.audio_token_mask(batch.input_ids)
        with collect_audio_attention(tiny_qwen2_audio, None, query_mask, audio_mask):
            observed = tiny_qwen2_audio.forward(batch).logits

    assert torch.equal(plain, observed)
    config: Any = tiny_qwen2_audio.language_model.config
    assert config._attn_implementation == "sdpa"


def test_aaa_loss_reaches_query_key_projections_and_the_audio_projector(tiny_qwen2_audio: SpeechLM) -> None:
    batch = two_row_batch(tiny_qwen2_audio)
    query_mask = perception_query_mask(tiny_qwen2_audio, batch)
    audio_mask = tiny_qwen2_audio.audio_token_mask(batch.input_ids)

    with collect_audio_attention(tiny_qwen2_audio, [0], query_mask, audio_mask) as collector:
        tiny_qwen2_audio.forward(batch)
        collector.loss().backward()

    attentions: list[Any] = tiny_qwen2_audio.decoder_attention_modules()
    model: Any = tiny_qwen2_audio.base_model
    assert attentions[0].q_proj.weight.grad.abs().sum() > 0
    assert attentions[0].k_proj.weight.grad.abs().sum() > 0
    assert model.model.multi_modal_projector.linear.weight.grad.abs().sum() > 0
    # Layer 1 is not observed and lies after layer 0's attention: nothing flows back into it.
    assert attentions[1].q_proj.weight.grad is None


def test_gradient_checkpointing_gives_the_same_aaa_gradients() -> None:
    gradients = []
    for checkpointing in (False, True):
        speech_lm = build_tiny_speech_lm("qwen2_audio", seed=2)
        if checkpointing:
            speech_lm.enable_gradient_checkpointing()
        speech_lm.model.train()
        batch = two_row_batch(speech_lm)
        query_mask = perception_query_mask(speech_lm, batch)
        audio_mask = speech_lm.audio_token_mask(batch.input_ids)
        with collect_audio_attention(speech_lm, None, query_mask, audio_mask) as collector:
            output = speech_lm.forward(batch)
            assert output.loss is not None
            (output.loss + 0.5 * collector.loss()).backward()
        first_attention: Any = speech_lm.decoder_attention_modules()[0]
        gradients.append(first_attention.q_proj.weight.grad.clone())

    assert torch.allclose(gradients[0], gradients[1], atol=1e-6)


@pytest.mark.slow
def test_training_with_aaa_raises_rho_more_than_plain_sft() -> None:
    examples = [
        SftExample(voiced_audio(0.6 + 0.1 * index, 100.0 + 30 * index, seed=index), 16_000, PROMPT, TARGET)
        for index in range(4)
    ]
    gains = {}
    for lambda_aaa in (0.0, 0.5):
        speech_lm = build_tiny_speech_lm("qwen2_audio", seed=0)
        batch = speech_lm.collate([SpeechExample(example.audio, PROMPT, TARGET) for example in examples])
        before = measure_rho(speech_lm, batch).mean()
        config = SftConfig(
            max_steps=12, batch_size=2, learning_rate=3e-3, lambda_aaa=lambda_aaa, aaa_objective="log", seed=0
        )
        train_sft(speech_lm, examples, config)
        gains[lambda_aaa] = float(measure_rho(speech_lm, batch).mean() - before)

    assert gains[0.5] > gains[0.0] + 0.2


@pytest.mark.parametrize(
    ("objective", "target", "expected"),
    [
        # rho (0.2, 0.5; the NaN example has no perception span and is left out)
        ("log", None, -(math.log(0.2 + 1e-6) + math.log(0.5 + 1e-6)) / 2),
        ("linear", None, ((1 - 0.2) + (1 - 0.5)) / 2),
        # target 0.4: 1 - 0.2 / 0.4 = 0.5, and rho 0.5 is past the target: 0
        ("target", 0.4, (0.5 + 0.0) / 2),
    ],
)
def test_aaa_loss_forms_by_hand(objective: AaaObjective, target: float | None, expected: float) -> None:
    rho = torch.tensor([0.2, float("nan"), 0.5])
    assert float(aaa_loss(rho, objective, target)) == pytest.approx(expected, rel=1e-6)


def test_the_target_is_a_multiple_of_the_starting_rho_capped_at_one() -> None:
    assert target_rho(0.17, 2.0) == pytest.approx(0.34)
    assert target_rho(0.6, 2.0) == 1.0
    with pytest.raises(ValueError, match="target rho"):
        aaa_loss(torch.tensor([0.2]), "target", None)


def test_the_target_hinge_stops_pulling_once_reached() -> None:
    rho = torch.tensor([0.1, 0.5], requires_grad=True)
    aaa_loss(rho, "target", 0.4).backward()
    assert rho.grad is not None
    # d/d rho of (1 - rho / 0.4) / 2 is -1.25 below the target, 0 above it
    assert rho.grad.tolist() == pytest.approx([-1.25, 0.0])
