"""Scoring responses with a reward model: batches of inputs, and the RL rollout scorer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ml.core.reward.features import StyleSynthesizer, as_float_audio
from ml.core.reward.model import RewardInput, RewardModel
from webapp.lib.output_format import ParsedOutput, parse_strategy_fields


@dataclass(frozen=True)
class RewardScore:
    content: float
    alignment: float


@torch.no_grad()
def score_responses(
    model: RewardModel, batch: Sequence[RewardInput], batch_size: int = 16
) -> list[RewardScore]:
    """Return one ``RewardScore`` per input, in order (evaluation mode, no gradients)."""
    was_training = model.training
    model.eval()
    scores: list[RewardScore] = []
    try:
        for start in range(0, len(batch), batch_size):
            output = model(model.prepare(batch[start : start + batch_size]))
            scores.extend(
                RewardScore(content=float(content), alignment=float(alignment))
                for content, alignment in zip(
                    output.content().tolist(), output.alignment().tolist(), strict=True
                )
            )
    finally:
        model.train(was_training)
    return scores


@dataclass(frozen=True)
class UserTurn:
    """What the reward model knows about an item when it scores a rollout."""

    user_audio: np.ndarray
    sample_rate: int
    emotion: str


def response_reward_scorer(
    model: RewardModel,
    turns: Mapping[str, UserTurn],
    synthesize: StyleSynthesizer,
    default_style: str = "calm",
) -> Callable[[str, ParsedOutput], RewardScore]:
    """Return a scorer of RL rollouts: the response span is spoken in the speech style the
    rollout's strategy span declares, then scored against the item's user turn.

    A rollout that declares no style is spoken in ``default_style`` rather than the fitting one,
    so leaving the style out earns no alignment for free. An empty response scores 0 and 0.
    """

    def score(item_id: str, parsed: ParsedOutput) -> RewardScore:
        response = parsed.span_text("response")
        if not response:
            return RewardScore(content=0.0, alignment=0.0)
        turn = turns[item_id]
        style = parse_strategy_fields(parsed.span_text("strategy")).speech_style or default_style
        samples, sample_rate = synthesize(response, style)
        reward_input = RewardInput(
            user_audio=as_float_audio(turn.user_audio),
            emotion=turn.emotion,
            response_text=response,
            response_audio=as_float_audio(samples),
            user_sample_rate=turn.sample_rate,
            response_sample_rate=sample_rate,
        )
        return score_responses(model, [reward_input])[0]

    return score
