"""Stage 1 of EchoChat: supervised fine-tuning with Acoustic-Anchored Attention (section 3.1).

Each optimizer step takes ``gradient_accumulation_steps`` micro-batches of ``batch_size``
examples; the loss is L_CE + lambda_AAA * L_AAA (see ``ml.core.aaa``). With ``lambda_aaa = 0``
there is no AAA loss, which is plain SFT; rho is still measured, without a gradient, and logged
(``log_rho``), so a run with and one without AAA draw Figure 5 together. The target objective's
target is fixed at the first micro-batch: ``aaa_target_ratio`` x its rho before any update. Progress goes to ``on_progress(fraction,
message, metrics)``; ``should_cancel()`` is polled before every step and stops the run cleanly
(the model keeps the updates made so far). Its defaults are ``ml.core.config.SftConfig``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ml.core.aaa import collect_audio_attention, perception_query_mask, target_rho
from ml.core.config import SftConfig
from ml.core.loop import CancelCheck, ProgressCallback, ResumeSpec, TrainingResult, run_steps
from ml.core.resume import training_state
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


@dataclass
class AaaTarget:
    """The target objective's rho, set from the first micro-batch a run sees (None until then)."""

    value: float | None = None


def sft_loss(
    speech_lm: SpeechLM,
    batch: SpeechBatch,
    config: SftConfig,
    scale: float = 1.0,
    target: AaaTarget | None = None,
) -> dict[str, float]:
    """Run forward and backward on one micro-batch (loss scaled by ``scale``); return its metrics.

    Backward runs inside the AAA context so gradient checkpointing recomputes the same path.
    ``target`` carries the target objective's rho between calls (a fresh one: this batch sets it).
    """
    batch = batch.to(speech_lm.device)
    with_aaa = config.lambda_aaa > 0
    if not with_aaa and not config.log_rho:
        output = speech_lm.forward(batch)
        assert output.loss is not None
        (output.loss * scale).backward()
        ce = float(output.loss.detach())
        return {"loss": ce, "ce": ce, "aaa": math.nan, "rho": math.nan}

    query_mask = perception_query_mask(speech_lm, batch)
    audio_mask = speech_lm.current_audio_mask(batch.input_ids)
    metrics: dict[str, float] = {}
    with collect_audio_attention(
        speech_lm, config.aaa_layers, query_mask, audio_mask, config.aaa_heads
    ) as collector:
        collector.track_gradient = with_aaa
        output = speech_lm.forward(batch)
        assert output.loss is not None
        rho = float(collector.rho().detach())
        loss = output.loss
        aaa = math.nan
        if with_aaa:
            goal: float | None = None
            if config.aaa_objective == "target":
                target = target if target is not None else AaaTarget()
                if target.value is None and math.isfinite(rho) and rho > 0:
                    target.value = target_rho(rho, config.aaa_target_ratio)
                goal = target.value
                metrics["aaa_target"] = goal if goal is not None else math.nan
            if goal is not None or config.aaa_objective != "target":
                term = collector.loss(config.aaa_epsilon, config.aaa_objective, goal)
                loss = loss + config.lambda_aaa * term
                aaa = float(term.detach())
        (loss * scale).backward()
    return {
        "loss": float(loss.detach()),
        "ce": float(output.loss.detach()),
        "aaa": aaa,
        "rho": rho,
        **metrics,
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
    target: AaaTarget | None = None,
) -> dict[str, float]:
    """Run one optimizer step over the micro-batches; return the metrics averaged over them."""
    optimizer.zero_grad(set_to_none=True)
    scale = 1.0 / len(micro_batches)
    target = target if target is not None else AaaTarget()
    metrics = [sft_loss(speech_lm, batch, config, scale, target) for batch in micro_batches]
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
    resume: ResumeSpec | None = None,
) -> TrainingResult:
    """Fine-tune ``speech_lm`` in place on the examples and return the per-step metrics.

    With ``resume``, the run saves its state there and continues after an earlier run's (``ml.core.resume``).
    """
    if not examples:
        raise ValueError("SFT needs at least one example")
    seed_everything(config.seed)
    prepare_for_training(speech_lm, config)
    speech_examples = to_speech_examples(examples)
    optimizer = build_optimizer(speech_lm, config)
    target = AaaTarget()

    def take_step(step: int, taken: list[int]) -> dict[str, float]:
        micro_batches = [
            speech_lm.collate([speech_examples[index] for index in taken[start : start + config.batch_size]])
            for start in range(0, len(taken), config.batch_size)
        ]
        learning_rate = _learning_rate(config, step)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate
        metrics = sft_step(speech_lm, micro_batches, optimizer, config, target)
        return {**metrics, "learning_rate": learning_rate}

    examples_per_step = config.batch_size * config.gradient_accumulation_steps
    state = training_state(
        resume,
        speech_lm.model,
        optimizer,
        lambda: {"aaa_target": target.value},
        lambda extra: setattr(target, "value", extra.get("aaa_target")),
    )
    result = run_steps(
        len(speech_examples), examples_per_step, config, take_step, on_progress, should_cancel, state
    )
    speech_lm.model.eval()
    return result
