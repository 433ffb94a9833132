"""Stage 2 of EchoChat: GRPO with Step-Decomposed Credit Assignment (section 3.2).

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

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from ml.core.batching import shuffled_batches
from ml.core.inference import InferenceItem
from ml.core.reward_model import RewardScore
from ml.core.sdca import (
    AdvantageMode,
    RolloutScores,
    SdcaConfig,
    reasoning_reward,
    response_reward,
    span_advantages,
    token_advantages,
    total_advantages,
    total_reward,
)
from ml.core.speech_model import (
    LoraSettings,
    SpeechBatch,
    SpeechExample,
    SpeechLM,
    completion_logprobs,
    resample,
)
from webapp.lib.output_format import (
    SPAN_NAMES,
    ParsedOutput,
    format_reward,
    parse_output,
    parse_strategy_fields,
)

ProgressCallback = Callable[[float, str, dict[str, float]], None]
CancelCheck = Callable[[], bool]
# A prompt for RL is what inference answers: an item id, its audio and the instruction.
RlPrompt = InferenceItem


@dataclass(frozen=True)
class StageScores:
    """A scorer's verdict on one rollout: judge stage scores in [0, 1], reward-model content in
    [0, 5] and audio alignment in [0, 1]. The format reward is not here: the parser gives it."""

    perception: float
    reasoning: float
    strategy: float
    content: float
    audio_alignment: float


# (item id, parsed rollout) -> stage scores. The Django side plugs in the judge and reward model.
RolloutScorer = Callable[[str, ParsedOutput], StageScores]
# (item id, parsed rollout) -> (s1, s2, s3) in [0, 1]: the judge's stage scores over their maxima.
StageJudge = Callable[[str, ParsedOutput], tuple[float, float, float]]
# (item id, parsed rollout) -> the reward model's content (0-5) and alignment (0-1).
ResponseScorer = Callable[[str, ParsedOutput], RewardScore]


def combined_scorer(stage_judge: StageJudge, response_scorer: ResponseScorer) -> RolloutScorer:
    """Return the RL scorer made of a stage judge and a response scorer (e.g. ``response_reward_scorer``)."""

    def score(item_id: str, parsed: ParsedOutput) -> StageScores:
        perception, reasoning, strategy = stage_judge(item_id, parsed)
        response = response_scorer(item_id, parsed)
        return StageScores(perception, reasoning, strategy, response.content, response.alignment)

    return score


@dataclass(frozen=True)
class RlConfig:
    mode: AdvantageMode = "sdca"
    group_size: int = 4
    kl_coef: float = 0.04
    learning_rate: float = 1e-5
    clip_epsilon: float = 0.2
    # Optimizer steps taken on one batch of rollouts (GRPO's mu); ratios depart from 1 after the first.
    updates_per_batch: int = 1
    prompts_per_step: int = 1
    epochs: int = 1
    # When set, the run stops after this many steps, whatever ``epochs`` says.
    max_steps: int | None = None
    max_new_tokens: int = 512
    temperature: float = 1.0
    top_p: float = 1.0
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    sdca: SdcaConfig = field(default_factory=SdcaConfig)
    lora: LoraSettings | None = field(default_factory=LoraSettings)
    gradient_checkpointing: bool = False
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in ("sdca", "grpo"):
            raise ValueError(f"unknown mode {self.mode!r}: expected 'sdca' or 'grpo'")
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: advantages are normalised within the group")
        if min(self.updates_per_batch, self.prompts_per_step, self.epochs, self.max_new_tokens) < 1:
            raise ValueError("updates_per_batch, prompts_per_step, epochs and max_new_tokens must be >= 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be >= 1 when set")
        if self.learning_rate <= 0 or self.kl_coef < 0 or self.clip_epsilon <= 0 or self.temperature <= 0:
            raise ValueError("learning_rate, clip_epsilon and temperature must be positive, kl_coef >= 0")

    def to_dict(self) -> dict[str, Any]:
        """Return the config as JSON-ready values (for checkpoint metadata and job rows)."""
        values = asdict(self)
        values["lora"] = self.lora.to_dict() if self.lora is not None else None
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> RlConfig:
        """Return a config read back from ``to_dict`` (unknown keys are an error)."""
        parsed = dict(values)
        if "sdca" in parsed:
            parsed["sdca"] = SdcaConfig(**parsed["sdca"])
        if parsed.get("lora") is not None:
            parsed["lora"] = LoraSettings.from_dict(parsed["lora"])
        return cls(**parsed)


@dataclass(frozen=True)
class RolloutGroup:
    """The G completions sampled for one prompt."""

    prompt: RlPrompt
    completions: tuple[str, ...]


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
        """Return flat metrics for the job's history: loss, KL, mean rewards, mean |advantage| per span."""
        values = {
            "loss": self.loss,
            "kl": self.kl,
            **{f"reward_{name}": value for name, value in self.rewards.items()},
        }
        stacked = torch.cat(self.span_advantages)
        for column, name in enumerate(SPAN_NAMES):
            values[f"advantage_abs_{name}"] = float(stacked[:, column].abs().mean())
        tokens = torch.cat([mask.sum(dim=1) for mask in self.completion_masks]).float()
        values["completion_tokens"] = float(tokens.mean())
        return values


@dataclass
class RlResult:
    # One entry per step: step plus ``RlStepResult.metrics()``.
    history: list[dict[str, float]] = field(default_factory=list)
    steps_completed: int = 0
    total_steps: int = 0
    cancelled: bool = False

    def last_metrics(self) -> dict[str, float]:
        """Return the last step's metrics ({} before any step)."""
        return dict(self.history[-1]) if self.history else {}


# --- the loss --------------------------------------------------------------------------


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


# --- rollouts and scoring --------------------------------------------------------------


def generate_rollouts(policy: SpeechLM, prompts: Sequence[RlPrompt], config: RlConfig) -> list[RolloutGroup]:
    """Return ``group_size`` sampled completions per prompt."""
    texts = policy.generate_batch(
        [(resample(prompt.audio, prompt.sample_rate), prompt.prompt) for prompt in prompts],
        max_new_tokens=config.max_new_tokens,
        do_sample=True,
        temperature=config.temperature,
        top_p=config.top_p,
        num_return_sequences=config.group_size,
    )
    return [
        RolloutGroup(prompt=prompt, completions=tuple(completions))
        for prompt, completions in zip(prompts, texts, strict=True)
    ]


def score_rollouts(item_id: str, completions: Sequence[str], scorer: RolloutScorer) -> list[RolloutScores]:
    """Return SDCA's scores of each completion: the scorer's stage scores and the parser's r_fmt."""
    scores: list[RolloutScores] = []
    for text in completions:
        parsed = parse_output(text)
        stage = scorer(item_id, parsed)
        scores.append(
            RolloutScores(
                perception=stage.perception,
                reasoning=stage.reasoning,
                strategy=stage.strategy,
                content=stage.content,
                audio_alignment=stage.audio_alignment,
                format=format_reward(parsed),
            )
        )
    return scores


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


@contextmanager
def dropout_disabled(module: nn.Module) -> Iterator[None]:
    """Set every dropout probability in ``module`` to 0 for the duration, without leaving train mode."""
    saved = [
        (layer, layer.p) for layer in module.modules() if isinstance(layer, nn.modules.dropout._DropoutNd)
    ]
    try:
        for layer, _ in saved:
            layer.p = 0.0
        yield
    finally:
        for layer, probability in saved:
            layer.p = probability


def _mean_rewards(scores: Sequence[RolloutScores], config: SdcaConfig) -> dict[str, float]:
    def mean(values: Sequence[float]) -> float:
        return float(np.mean(values))

    return {
        "total": mean([total_reward(score, config) for score in scores]),
        "reasoning": mean([reasoning_reward(score, config) for score in scores]),
        "response": mean([response_reward(score, config) for score in scores]),
        "format": mean([score.format for score in scores]),
        "perception_score": mean([score.perception for score in scores]),
        "reasoning_score": mean([score.reasoning for score in scores]),
        "strategy_score": mean([score.strategy for score in scores]),
        "content": mean([score.content for score in scores]),
        "audio_alignment": mean([score.audio_alignment for score in scores]),
    }


def rl_update(
    policy: SpeechLM,
    reference: SpeechLM | None,
    groups: Sequence[RolloutGroup],
    scorer: RolloutScorer,
    config: RlConfig,
    optimizer: torch.optim.Optimizer | None = None,
) -> RlStepResult:
    """Score given rollouts, compute their advantages and the GRPO loss, and update the policy.

    Without an optimizer the gradients are computed and left on the parameters, and nothing is
    updated. ``reference`` must share the policy's tokenizer (it is the same base model). The
    reported loss and KL are those of the first update, measured against the sampling policy.
    """
    if not groups:
        raise ValueError("an RL update needs at least one rollout group")
    with dropout_disabled(policy.model):
        return _rl_update(policy, reference, groups, scorer, config, optimizer)


def _rl_update(
    policy: SpeechLM,
    reference: SpeechLM | None,
    groups: Sequence[RolloutGroup],
    scorer: RolloutScorer,
    config: RlConfig,
    optimizer: torch.optim.Optimizer | None,
) -> RlStepResult:
    prepared: list[_PreparedGroup] = []
    all_scores: list[list[RolloutScores]] = []
    span_adv_list: list[torch.Tensor] = []
    spans_list: list[list[dict[str, tuple[int, int]]]] = []
    for group in groups:
        if len(group.completions) < 2:
            raise ValueError("each group needs at least two completions to normalise over")
        scores = score_rollouts(group.prompt.item_id, group.completions, scorer)
        audio = resample(group.prompt.audio, group.prompt.sample_rate)
        batch = policy.collate(
            [SpeechExample(audio, group.prompt.prompt, target=text) for text in group.completions]
        )
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
            if config.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), config.max_grad_norm)
            optimizer.step()

    flat_scores = [score for scores in all_scores for score in scores]
    return RlStepResult(
        loss=first_loss,
        kl=first_kl,
        rewards=_mean_rewards(flat_scores, config.sdca),
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
) -> RlStepResult:
    """Sample ``group_size`` rollouts per prompt from the policy, then ``rl_update`` on them."""
    groups = generate_rollouts(policy, prompts_with_audio, config)
    return rl_update(policy, reference, groups, scorer, config, optimizer)


# --- the training loop -----------------------------------------------------------------


def prepare_policy(policy: SpeechLM, reference: SpeechLM | None, config: RlConfig) -> None:
    """Apply device, dtype, gradient checkpointing and LoRA to the policy; freeze the reference."""
    dtype = getattr(torch, config.dtype)
    policy.model.to(device=config.device, dtype=dtype)
    if config.gradient_checkpointing:
        policy.enable_gradient_checkpointing()
    if config.lora is not None and policy.lora is None:
        policy.apply_lora(config.lora)
    policy.model.train()
    if reference is not None:
        reference.model.to(device=config.device, dtype=dtype)
        reference.model.eval()
        reference.model.requires_grad_(False)


def train_rl(
    policy: SpeechLM,
    reference: SpeechLM | None,
    prompts: Sequence[RlPrompt],
    scorer: RolloutScorer,
    config: RlConfig,
    on_progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
) -> RlResult:
    """Run GRPO (SDCA or vanilla advantages) over the prompts; the policy is updated in place.

    Each step takes ``prompts_per_step`` prompts (reshuffled every pass). ``should_cancel()`` is
    polled before every step; a cancelled run keeps the updates made so far.
    """
    if not prompts:
        raise ValueError("RL needs at least one prompt")
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    order_rng = random.Random(config.seed)

    prepare_policy(policy, reference, config)
    optimizer = torch.optim.AdamW(
        policy.trainable_parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    steps_per_epoch = math.ceil(len(prompts) / config.prompts_per_step)
    total_steps = config.max_steps or config.epochs * steps_per_epoch
    result = RlResult(total_steps=total_steps)
    batches = shuffled_batches(len(prompts), config.prompts_per_step, order_rng)
    for step in range(total_steps):
        if should_cancel is not None and should_cancel():
            result.cancelled = True
            break
        taken = [prompts[index] for index in next(batches)]
        outcome = rl_step(policy, reference, taken, scorer, config, optimizer)
        metrics = {"step": float(step + 1), **outcome.metrics()}
        result.history.append(metrics)
        result.steps_completed = step + 1
        if on_progress is not None:
            on_progress((step + 1) / total_steps, f"step {step + 1}/{total_steps}", dict(metrics))
    policy.model.eval()
    return result


# --- a deterministic scorer for tests and the demo -------------------------------------


@dataclass(frozen=True)
class HeuristicReference:
    """What a rollout for one item is compared with (gold perception and reasoning text, the
    recommended strategies, the reference response, the fitting speech style)."""

    perception: str
    reasoning: str
    strategies: tuple[str, ...]
    response: str
    speech_style: str | None = None


_WORD = re.compile(r"[a-z0-9']+")


def word_f1(candidate: str, reference: str) -> float:
    """Return the F1 of the word multisets of two texts (lower-cased; 0 when either is empty)."""
    candidate_words = Counter(_WORD.findall(candidate.lower()))
    reference_words = Counter(_WORD.findall(reference.lower()))
    overlap = sum((candidate_words & reference_words).values())
    if not overlap:
        return 0.0
    precision = overlap / sum(candidate_words.values())
    recall = overlap / sum(reference_words.values())
    return 2 * precision * recall / (precision + recall)


class HeuristicScorer:
    """A stand-in for the judge and reward model that needs no server or trained weights.

    s1 and s2 are word F1 against the gold perception and reasoning; s3 is the Jaccard overlap of
    the strategy names with the recommended ones; content is 5 x word F1 against the reference
    response; alignment is 1 when the declared speech style is the fitting one (0.5 when no
    fitting style is known). Items without a reference score 0 everywhere.
    """

    def __init__(self, references: Mapping[str, HeuristicReference]) -> None:
        self.references = dict(references)

    def __call__(self, item_id: str, parsed: ParsedOutput) -> StageScores:
        reference = self.references.get(item_id)
        if reference is None:
            return StageScores(0.0, 0.0, 0.0, 0.0, 0.0)
        strategy = parse_strategy_fields(parsed.span_text("strategy"))
        wanted = {" ".join(name.lower().split()) for name in reference.strategies}
        chosen = set(strategy.strategies)
        union = wanted | chosen
        if reference.speech_style is None:
            alignment = 0.5
        else:
            alignment = 1.0 if strategy.speech_style == reference.speech_style.strip().lower() else 0.0
        return StageScores(
            perception=word_f1(parsed.span_text("perception"), reference.perception),
            reasoning=word_f1(parsed.span_text("reasoning"), reference.reasoning),
            strategy=len(wanted & chosen) / len(union) if union else 0.0,
            content=5.0 * word_f1(parsed.span_text("response"), reference.response),
            audio_alignment=alignment,
        )
