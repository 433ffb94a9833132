"""Stage 2 of EchoChat: GRPO with Step-Decomposed Credit Assignment (section 3.2), one update.

One step, per prompt: sample G rollouts from the policy, parse each into its perception /
reasoning / strategy / response spans (``webapp.lib.output_format``), score it (a ``RolloutScorer`` gives
the judge's stage scores and the reward model's content and alignment; the parser gives r_fmt),
turn the scores into per-token advantages (``ml.core.sdca``: each span its own group-normalised
signal, or one normalised R_total everywhere with ``mode="grpo"``), and minimise the GRPO loss

    per token:  -(min(r A, clip(r, 1 - eps, 1 + eps) A) - beta * KL)
    r = pi / pi_old,   KL = pi_ref / pi - log(pi_ref / pi) - 1   (the k3 estimator, >= 0)

averaged over each completion's tokens, then over completions (the original GRPO aggregation).
The reference is a frozen copy of the starting policy, or, with ``reference=None``, the policy
itself with its LoRA adapters switched off, which saves a model's worth of GPU memory; that is
the starting policy only when the adapters were added for this run (merge an SFT adapter first).

Why a compact loop of our own rather than a subclass of TRL's ``GRPOTrainer``: the trainer does
accept a per-token advantage tensor, but it forwards only image inputs to the model, so audio
features would have to reach the policy through an override of its private per-token log-prob
method, whose name and signature have changed between TRL releases; generation goes through
its own prompt templating, which knows nothing of our audio placeholders; and it would add TRL
(and its pinned transformers range) as a dependency for roughly the hundred lines below. Here
the same ``SpeechLM`` interface as SFT and inference builds the batches, so audio, span offsets
and checkpoints work identically in all three.

Rollouts are decoded to text and re-tokenized for the update, the way the parser and judges see
them. The log-probabilities are those of the re-tokenized sequence, which for a byte-level BPE is
the generated one except in rare non-canonical splits. Dropout is switched off during the update
(the rollouts were sampled without it, so ratios and KL must be measured without it too), while
the model stays in training mode so gradient checkpointing remains active. A rollout cut off at
``max_new_tokens`` never emitted an end-of-turn token, so that label is left out of its loss.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ml.core.config import RlConfig
from ml.core.rl.rollouts import (
    RlPrompt,
    RolloutGroup,
    RolloutScorer,
    generate_rollouts,
    mean_rewards,
    score_rollouts,
)
from ml.core.runtime import Ranks, average_gradients
from ml.core.sdca import RolloutScores, span_advantages, token_advantages, total_advantages
from ml.core.speech.inputs import SpeechBatch, completion_logprobs
from ml.core.speech.model import SpeechLM
from webapp.lib.output_format import SPAN_NAMES


@dataclass
class RlStepResult:
    """What one step did. Per-group tensors are G x 4 (span advantages, columns in SPAN_NAMES
    order) and G x T (token advantages and completion masks, in the update batch's coordinates)."""

    loss: float
    kl: float
    rewards: dict[str, float]
    span_advantages: list[torch.Tensor]
    token_advantages: list[torch.Tensor]
    completion_masks: list[torch.Tensor]
    token_spans: list[list[dict[str, tuple[int, int]]]]
    completions: list[tuple[str, ...]]
    scores: list[list[RolloutScores]]

    def metrics(self) -> dict[str, float]:
        """Return flat metrics for the job's history: loss, KL, mean rewards (of judged rollouts),
        mean |advantage| per span, and how many rollouts the judge failed on (no advantage)."""
        values = {
            "loss": self.loss,
            "kl": self.kl,
            **{f"reward_{name}": value for name, value in self.rewards.items()},
            "judge_failed_rollouts": float(
                sum(score.judge_failed for scores in self.scores for score in scores)
            ),
        }
        stacked = torch.cat(self.span_advantages)
        for column, name in enumerate(SPAN_NAMES):
            values[f"advantage_abs_{name}"] = float(stacked[:, column].abs().mean())
        tokens = torch.cat([mask.sum(dim=1) for mask in self.completion_masks]).float()
        values["completion_tokens"] = float(tokens.mean())
        return values


def grpo_token_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    reference_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    clip_epsilon: float,
    kl_coef: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (loss, mean KL over completion tokens) for G x T per-token inputs (module docstring)."""
    mask = completion_mask.to(logprobs.dtype)
    ratio = torch.exp(logprobs - old_logprobs)
    clipped = torch.clamp(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon)
    surrogate = torch.minimum(ratio * advantages, clipped * advantages)
    log_ratio_to_reference = reference_logprobs - logprobs
    kl = torch.exp(log_ratio_to_reference) - log_ratio_to_reference - 1.0
    per_token = -(surrogate - kl_coef * kl)
    per_completion = (per_token * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
    kl_mean = (kl * mask).sum() / mask.sum().clamp(min=1.0)
    return per_completion.mean(), kl_mean.detach()


@dataclass
class _PreparedGroup:
    batch: SpeechBatch
    token_advantages: torch.Tensor
    completion_mask: torch.Tensor
    reference_logprobs: torch.Tensor
    old_logprobs: torch.Tensor | None = None


def _completion_mask(batch: SpeechBatch, max_new_tokens: int) -> torch.Tensor:
    """Return the label mask, without the end-of-turn label of rollouts cut off at the token limit."""
    mask = batch.completion_mask().clone()
    for row, (start, offsets) in enumerate(zip(batch.target_starts, batch.target_offsets, strict=True)):
        generated = len(offsets) - 1
        if start >= 0 and generated >= max_new_tokens:
            mask[row, start + generated] = False
    return mask


def _policy_logprobs(speech_lm: SpeechLM, batch: SpeechBatch, temperature: float) -> torch.Tensor:
    output = speech_lm.forward(batch)
    logits = output.logits if temperature == 1.0 else output.logits / temperature
    labels = batch.labels
    assert labels is not None
    return completion_logprobs(logits, labels.to(logits.device))


def _reference_context(policy: SpeechLM, reference: SpeechLM | None) -> AbstractContextManager[object]:
    if reference is not None:
        return nullcontext()
    disable = getattr(policy.model, "disable_adapter", None)
    if not callable(disable):
        raise ValueError("reference=None needs a LoRA policy (its adapters switched off are the reference)")
    context: AbstractContextManager[object] = disable()
    return context


@torch.no_grad()
def _reference_logprobs(
    policy: SpeechLM, reference: SpeechLM | None, batch: SpeechBatch, temperature: float
) -> torch.Tensor:
    with _reference_context(policy, reference):
        model = reference if reference is not None else policy
        return _policy_logprobs(model, batch, temperature).to(policy.device)


# Rates transformers modules apply themselves when ``self.training`` (F.dropout, attention dropout,
# layerdrop), beside nn.Dropout layers.
_FUNCTIONAL_DROPOUT_RATES = ("dropout", "attention_dropout", "activation_dropout", "layerdrop")


@contextmanager
def dropout_disabled(module: nn.Module) -> Iterator[None]:
    """Set every dropout probability and rate in ``module`` to 0 for the duration, without leaving
    train mode: nn.Dropout layers and the float rates of ``_FUNCTIONAL_DROPOUT_RATES``."""
    saved: list[tuple[nn.Module, str, float]] = []
    for layer in module.modules():
        if isinstance(layer, nn.modules.dropout._DropoutNd):
            saved.append((layer, "p", layer.p))
        for name in _FUNCTIONAL_DROPOUT_RATES:
            rate = vars(layer).get(name)
            if isinstance(rate, float):
                saved.append((layer, name, rate))
    try:
        for layer, name, _ in saved:
            setattr(layer, name, 0.0)
        yield
    finally:
        for layer, name, rate in saved:
            setattr(layer, name, rate)


def rl_update(
    policy: SpeechLM,
    reference: SpeechLM | None,
    groups: Sequence[RolloutGroup],
    scorer: RolloutScorer,
    config: RlConfig,
    optimizer: torch.optim.Optimizer | None = None,
    ranks: Ranks | None = None,
) -> RlStepResult:
    """Score given rollouts, compute their advantages and the GRPO loss, and update the policy.

    Without an optimizer the gradients are computed and left on the parameters, and nothing is
    updated. ``reference`` must share the policy's tokenizer (it is the same base model). The
    reported loss and KL are those of the first update, measured against the sampling policy.
    With several ``ranks`` (each with as many groups) gradients are averaged over them before
    clipping, so the clipping norm is the global gradient's.
    """
    if not groups:
        raise ValueError("an RL update needs at least one rollout group")
    with dropout_disabled(policy.model):
        return _rl_update(policy, reference, groups, scorer, config, optimizer, ranks or Ranks())


def _rl_update(
    policy: SpeechLM,
    reference: SpeechLM | None,
    groups: Sequence[RolloutGroup],
    scorer: RolloutScorer,
    config: RlConfig,
    optimizer: torch.optim.Optimizer | None,
    ranks: Ranks,
) -> RlStepResult:
    prepared: list[_PreparedGroup] = []
    all_scores: list[list[RolloutScores]] = []
    span_adv_list: list[torch.Tensor] = []
    spans_list: list[list[dict[str, tuple[int, int]]]] = []
    for group in groups:
        if len(group.completions) < 2:
            raise ValueError("each group needs at least two completions to normalise over")
        scores = score_rollouts(group.prompt.item_id, group.completions, scorer)
        batch = policy.collate([group.prompt.speech_example(target=text) for text in group.completions])
        spans: list[dict[str, tuple[int, int]]] = [
            {name: bounds for name, bounds in row.items()} for row in policy.target_span_token_ranges(batch)
        ]
        mask = _completion_mask(batch, config.max_new_tokens)
        span_adv = span_advantages(scores, config.sdca)
        advantages = token_advantages(
            span_adv, total_advantages(scores, config.sdca), spans, mask, config.mode
        )
        reference_logprobs = _reference_logprobs(policy, reference, batch, config.temperature)
        prepared.append(
            _PreparedGroup(batch, advantages.to(policy.device), mask.to(policy.device), reference_logprobs)
        )
        all_scores.append(scores)
        span_adv_list.append(span_adv)
        spans_list.append(spans)

    first_loss = first_kl = 0.0
    updates = config.updates_per_batch if optimizer is not None else 1
    for update in range(updates):
        for parameter in policy.trainable_parameters():
            parameter.grad = None
        losses: list[float] = []
        kls: list[float] = []
        for group_inputs in prepared:
            logprobs = _policy_logprobs(policy, group_inputs.batch, config.temperature)
            if group_inputs.old_logprobs is None:
                # The first update runs on the policy that sampled the rollouts: pi_old = pi.
                group_inputs.old_logprobs = logprobs.detach()
            loss, kl = grpo_token_loss(
                logprobs,
                group_inputs.old_logprobs,
                group_inputs.reference_logprobs,
                group_inputs.token_advantages,
                group_inputs.completion_mask,
                config.clip_epsilon,
                config.kl_coef,
            )
            (loss / len(prepared)).backward()
            losses.append(float(loss.detach()))
            kls.append(float(kl))
        if update == 0:
            first_loss, first_kl = float(np.mean(losses)), float(np.mean(kls))
        if optimizer is not None:
            if ranks.world_size > 1:
                average_gradients(policy.trainable_parameters())
            if config.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), config.max_grad_norm)
            optimizer.step()

    flat_scores = [score for scores in all_scores for score in scores]
    return RlStepResult(
        loss=first_loss,
        kl=first_kl,
        rewards=mean_rewards(flat_scores, config.sdca),
        span_advantages=span_adv_list,
        token_advantages=[group.token_advantages.cpu() for group in prepared],
        completion_masks=[group.completion_mask.cpu() for group in prepared],
        token_spans=spans_list,
        completions=[group.completions for group in groups],
        scores=all_scores,
    )


def rl_step(
    policy: SpeechLM,
    reference: SpeechLM | None,
    prompts_with_audio: Sequence[RlPrompt],
    scorer: RolloutScorer,
    config: RlConfig,
    optimizer: torch.optim.Optimizer | None = None,
    ranks: Ranks | None = None,
) -> RlStepResult:
    """Sample ``group_size`` rollouts per prompt from the policy, then ``rl_update`` on them."""
    groups = generate_rollouts(policy, prompts_with_audio, config)
    return rl_update(policy, reference, groups, scorer, config, optimizer, ranks)
