"""Stage 1 of EchoChat: supervised fine-tuning with Acoustic-Anchored Attention (section 3.1).

Each optimizer step takes ``gradient_accumulation_steps`` micro-batches of ``batch_size``
examples; the loss is L_CE + lambda_AAA * L_AAA (see ``ml.core.aaa``). With ``lambda_aaa = 0``
there is no AAA loss, which is plain SFT; rho is still measured, without a gradient, and logged
(``log_rho``), so a run with and one without AAA draw Figure 5 together. The target objective's
target is fixed at the first micro-batch: ``aaa_target_ratio`` x its rho before any update. Progress goes to ``on_progress(fraction,
message, metrics)``; ``should_cancel()`` is polled before every step and stops the run cleanly
(the model keeps the updates made so far). Its defaults are ``ml.core.config.SftConfig``.

A step's loss is normalised over the whole step: the cross-entropy by its target-token count and
L_AAA by its count of examples with a perception span, not per micro-batch. With several ranks
(``ranks``) the step is global too: each step's ``batch_size x gradient_accumulation_steps x
world_size`` examples are split among the ranks, the counts are summed over them, gradients are
averaged before clipping, the AAA target is the count-weighted rho of every rank's first
micro-batch, and the metrics are the global ones. So N processes train as one does on the same
global batch (up to float rounding).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ml.core.aaa import collect_audio_attention, perception_query_mask, target_rho
from ml.core.config import SftConfig
from ml.core.loop import CancelCheck, ProgressCallback, ResumeSpec, TrainingResult, run_steps
from ml.core.resume import training_state
from ml.core.runtime import Ranks, average_gradients, prepare_for_training, seed_everything, sum_across_ranks
from ml.core.speech.inputs import IGNORE_INDEX, PriorTurn, SpeechBatch, SpeechExample, resample
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
    """The target objective's rho, set from the first micro-batch a run sees (None until then).

    With several ranks it is set from every rank's first micro-batch of a step at once: the sum of
    their examples' rho over their count (``settle``), so every rank holds the same target.
    """

    value: float | None = None
    ranks: Ranks = field(default_factory=Ranks)
    # Whether the next micro-batch may set the value: only a step's first, so every rank makes
    # the same number of ``settle`` calls whatever its micro-batch count.
    settling: bool = True

    def settle(self, rho_sum: float, count: float, ratio: float) -> None:
        """Set the value from this rank's (sum of per-example rho, examples), summed over ranks."""
        total, examples = sum_across_ranks([rho_sum, count], self.ranks)
        if examples > 0 and total > 0:
            self.value = target_rho(total / examples, ratio)


def sft_loss(
    speech_lm: SpeechLM,
    batch: SpeechBatch,
    config: SftConfig,
    scale: float = 1.0,
    target: AaaTarget | None = None,
    aaa_scale: float | None = None,
) -> dict[str, float]:
    """Run forward and backward on one micro-batch (loss scaled by ``scale``); return its metrics.

    Backward runs inside the AAA context so gradient checkpointing recomputes the same path.
    ``target`` carries the target objective's rho between calls (a fresh one: this batch sets it).
    ``aaa_scale`` multiplies L_AAA's gradient instead of ``scale`` (``sft_step`` normalises the two
    terms by different counts); the returned metrics are this micro-batch's, unscaled.
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
        per_example = collector.per_example_rho().detach()
        rho = float(collector.rho().detach())
        loss = output.loss
        objective = output.loss * scale
        aaa = math.nan
        if with_aaa:
            goal: float | None = None
            if config.aaa_objective == "target":
                target = target if target is not None else AaaTarget()
                if target.value is None and target.settling:
                    valid = per_example[~per_example.isnan()]
                    target.settle(float(valid.sum()), valid.numel(), config.aaa_target_ratio)
                goal = target.value
                metrics["aaa_target"] = goal if goal is not None else math.nan
            if goal is not None or config.aaa_objective != "target":
                term = collector.loss(config.aaa_epsilon, config.aaa_objective, goal)
                loss = loss + config.lambda_aaa * term
                objective = objective + config.lambda_aaa * (scale if aaa_scale is None else aaa_scale) * term
                aaa = float(term.detach())
        objective.backward()
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


def target_token_count(batch: SpeechBatch) -> int:
    """Return how many tokens of the batch the cross-entropy averages over (``causal_lm_loss``)."""
    labels = batch.labels
    return 0 if labels is None else int((labels[:, 1:] != IGNORE_INDEX).sum())


def sft_step(
    speech_lm: SpeechLM,
    micro_batches: Sequence[SpeechBatch],
    optimizer: torch.optim.Optimizer,
    config: SftConfig,
    target: AaaTarget | None = None,
    ranks: Ranks | None = None,
) -> dict[str, float]:
    """Run one optimizer step over the micro-batches (this rank's, possibly none); return the
    step's metrics over all of them on every rank (module docstring)."""
    ranks = ranks if ranks is not None else Ranks()
    optimizer.zero_grad(set_to_none=True)
    target = target if target is not None else AaaTarget(ranks=ranks)
    measures_rho = config.lambda_aaa > 0 or config.log_rho
    tokens = [target_token_count(batch) for batch in micro_batches]
    spans = [
        int(perception_query_mask(speech_lm, batch).any(dim=1).sum()) if measures_rho else 0
        for batch in micro_batches
    ]
    total_tokens, total_spans = sum_across_ranks([sum(tokens), sum(spans)], ranks)
    # Gradients are averaged over the ranks, so each rank's share is scaled up by their number.
    ce_sum = aaa_sum = rho_sum = 0.0
    for index, batch in enumerate(micro_batches):
        target.settling = index == 0
        entry = sft_loss(
            speech_lm,
            batch,
            config,
            scale=ranks.world_size * tokens[index] / max(total_tokens, 1.0),
            target=target,
            aaa_scale=ranks.world_size * spans[index] / max(total_spans, 1.0),
        )
        ce_sum += entry["ce"] * tokens[index]
        if spans[index]:
            rho_sum += entry["rho"] * spans[index]
            if math.isfinite(entry["aaa"]):
                aaa_sum += entry["aaa"] * spans[index]
    needs_target = config.lambda_aaa > 0 and config.aaa_objective == "target"
    if not micro_batches and needs_target and target.value is None:
        target.settle(0.0, 0, config.aaa_target_ratio)  # the other ranks' first micro-batches set it
    # L_AAA applied on every rank or on none: the target, if any, is the same everywhere.
    aaa_on = config.lambda_aaa > 0 and (not needs_target or target.value is not None)
    ce_total, aaa_total, rho_total = sum_across_ranks([ce_sum, aaa_sum, rho_sum], ranks)
    parameters = speech_lm.trainable_parameters()
    if ranks.world_size > 1:
        average_gradients(parameters)
    if config.max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
    optimizer.step()
    ce = ce_total / total_tokens if total_tokens else math.nan
    aaa = aaa_total / total_spans if aaa_on and total_spans else math.nan
    metrics = {
        "loss": ce + config.lambda_aaa * aaa if math.isfinite(aaa) else ce,
        "ce": ce,
        "aaa": aaa,
        "rho": rho_total / total_spans if measures_rho and total_spans else math.nan,
    }
    if needs_target:
        metrics["aaa_target"] = target.value if target.value is not None else math.nan
    return metrics


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
    ranks: Ranks | None = None,
    aaa_target: float | None = None,
    resume: ResumeSpec | None = None,
) -> TrainingResult:
    """Fine-tune ``speech_lm`` in place on the examples and return the per-step metrics.

    With several ``ranks`` every rank passes all the examples and trains on its part of each
    step (module docstring); every rank's result holds the global metrics. ``aaa_target``: the
    target rho* of the run being resumed (``StartModel.aaa_target``); None sets it from this
    run's first micro-batch (of every rank). With ``resume``, the run saves its state there and
    continues after an earlier run's (``ml.core.resume``)."""
    ranks = ranks if ranks is not None else Ranks()
    if len(examples) < ranks.world_size:
        raise ValueError(f"SFT needs at least one example per process, got {len(examples)}")
    seed_everything(config.seed)
    prepare_for_training(speech_lm, config)
    speech_examples = to_speech_examples(examples)
    optimizer = build_optimizer(speech_lm, config)
    target = AaaTarget(aaa_target, ranks=ranks)

    def take_step(step: int, taken: list[int]) -> dict[str, float]:
        mine = taken[ranks.rank :: ranks.world_size]
        micro_batches = [
            speech_lm.collate([speech_examples[index] for index in mine[start : start + config.batch_size]])
            for start in range(0, len(mine), config.batch_size)
        ]
        learning_rate = _learning_rate(config, step)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate
        metrics = sft_step(speech_lm, micro_batches, optimizer, config, target, ranks)
        return {**metrics, "learning_rate": learning_rate}

    examples_per_step = config.batch_size * config.gradient_accumulation_steps * ranks.world_size
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
