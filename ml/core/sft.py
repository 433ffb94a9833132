"""Stage 1 of EchoChat: supervised fine-tuning with Acoustic-Anchored Attention (section 3.1).

Each optimizer step takes ``gradient_accumulation_steps`` micro-batches of ``batch_size``
examples; the loss is L_CE + lambda_AAA * L_AAA (see ``ml.core.aaa``). With ``lambda_aaa = 0`` the
AAA branch is skipped entirely, which is plain SFT. Progress goes to ``on_progress(fraction,
message, metrics)``; ``should_cancel()`` is polled before every step and stops the run cleanly
(the model keeps the updates made so far). Its defaults are ``ml.core.config.SftConfig``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ml.core.aaa import collect_audio_attention, perception_query_mask
from ml.core.config import SftConfig
from ml.core.loop import CancelCheck, ProgressCallback, TrainingResult, run_steps
from ml.core.runtime import prepare_for_training, seed_everything
from ml.core.speech.inputs import PriorTurn, SpeechBatch, SpeechExample, resample
from ml.core.speech.model import SpeechLM


@dataclass(frozen=True)
class SftExample:
    audio: np.ndarray
    sample_rate: int
    prompt: str
    target_text: str
    # A dialogue's earlier exchanges (oldest first): conditioning only, never in the loss.
    history: tuple[PriorTurn, ...] = ()


def to_speech_examples(examples: Sequence[SftExample]) -> list[SpeechExample]:
    """Return the examples at the model's 16 kHz sample rate."""
    return [
        SpeechExample(
            audio=resample(example.audio, example.sample_rate),
            prompt=example.prompt,
            target=example.target_text,
            history=example.history,
        )
        for example in examples
    ]


def sft_loss(
    speech_lm: SpeechLM, batch: SpeechBatch, config: SftConfig, scale: float = 1.0
) -> dict[str, float]:
    """Run forward and backward on one micro-batch (loss scaled by ``scale``); return its metrics.

    Backward runs inside the AAA context so gradient checkpointing recomputes the same path.
    """
    batch = batch.to(speech_lm.device)
    if config.lambda_aaa <= 0:
        output = speech_lm.forward(batch)
        assert output.loss is not None
        (output.loss * scale).backward()
        ce = float(output.loss.detach())
        return {"loss": ce, "ce": ce, "aaa": math.nan, "rho": math.nan}

    query_mask = perception_query_mask(speech_lm, batch)
    audio_mask = speech_lm.current_audio_mask(batch.input_ids)
    with collect_audio_attention(
        speech_lm, config.aaa_layers, query_mask, audio_mask, config.aaa_heads
    ) as collector:
        output = speech_lm.forward(batch)
        assert output.loss is not None
        aaa = collector.loss(config.aaa_epsilon)
        rho = float(collector.rho().detach())
        loss = output.loss + config.lambda_aaa * aaa
        (loss * scale).backward()
    return {
        "loss": float(loss.detach()),
        "ce": float(output.loss.detach()),
        "aaa": float(aaa.detach()),
        "rho": rho,
    }


def build_optimizer(speech_lm: SpeechLM, config: SftConfig) -> torch.optim.Optimizer:
    """Return AdamW over the trainable parameters."""
    return torch.optim.AdamW(
        speech_lm.trainable_parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )


def sft_step(
    speech_lm: SpeechLM,
    micro_batches: Sequence[SpeechBatch],
    optimizer: torch.optim.Optimizer,
    config: SftConfig,
) -> dict[str, float]:
    """Run one optimizer step over the micro-batches; return the metrics averaged over them."""
    optimizer.zero_grad(set_to_none=True)
    scale = 1.0 / len(micro_batches)
    metrics = [sft_loss(speech_lm, batch, config, scale) for batch in micro_batches]
    if config.max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(speech_lm.trainable_parameters(), config.max_grad_norm)
    optimizer.step()
    return {name: float(np.mean([entry[name] for entry in metrics])) for name in metrics[0]}


def _learning_rate(config: SftConfig, step: int) -> float:
    if config.warmup_steps and step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    return config.learning_rate


def train_sft(
    speech_lm: SpeechLM,
    examples: Sequence[SftExample],
    config: SftConfig,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
) -> TrainingResult:
    """Fine-tune ``speech_lm`` in place on the examples and return the per-step metrics."""
    if not examples:
        raise ValueError("SFT needs at least one example")
    seed_everything(config.seed)
    prepare_for_training(speech_lm, config)
    speech_examples = to_speech_examples(examples)
    optimizer = build_optimizer(speech_lm, config)

    def take_step(step: int, taken: list[int]) -> dict[str, float]:
        micro_batches = [
            speech_lm.collate([speech_examples[index] for index in taken[start : start + config.batch_size]])
            for start in range(0, len(taken), config.batch_size)
        ]
        learning_rate = _learning_rate(config, step)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate
        return {**sft_step(speech_lm, micro_batches, optimizer, config), "learning_rate": learning_rate}

    examples_per_step = config.batch_size * config.gradient_accumulation_steps
    result = run_steps(len(speech_examples), examples_per_step, config, take_step, on_progress, should_cancel)
    speech_lm.model.eval()
    return result
