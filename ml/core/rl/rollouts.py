"""RL rollouts: sampling G completions per prompt, and scoring them for SDCA.

A ``RolloutScorer`` gives the judge's stage scores and the reward model's content and alignment
(``combined_scorer`` makes one of a stage judge and a response scorer); the parser gives r_fmt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ml.core.config import RlConfig, SdcaConfig
from ml.core.inference import InferenceItem
from ml.core.reward.scoring import RewardScore
from ml.core.sdca import RolloutScores, reasoning_reward, response_reward, total_reward
from ml.core.speech.model import SpeechLM
from webapp.lib.output_format import ParsedOutput, format_reward, parse_output

# A prompt for RL is what inference answers: an item id, its audio, the instruction and, for a
# dialogue turn, the earlier exchanges.
RlPrompt = InferenceItem


@dataclass(frozen=True)
class StageScores:
    """A scorer's verdict on one rollout: judge stage scores in [0, 1], reward-model content in
    [0, 5] and audio alignment in [0, 1]. The format reward is not here: the parser gives it.
    ``judge_failed``: the judge gave no usable answer, so the scores mean nothing (all 0) and the
    rollout is left out of its group's advantages (``ml.core.sdca``)."""

    perception: float
    reasoning: float
    strategy: float
    content: float
    audio_alignment: float
    judge_failed: bool = False


# (item id, parsed rollout) -> stage scores. The Django side plugs in the judge and reward model.
RolloutScorer = Callable[[str, ParsedOutput], StageScores]
# (item id, parsed rollout) -> (s1, s2, s3) in [0, 1]: the judge's stage scores over their maxima,
# or None when the judge's answer was unusable (a judge error, not a score).
StageJudge = Callable[[str, ParsedOutput], tuple[float, float, float] | None]
# (item id, parsed rollout) -> the reward model's content (0-5) and alignment (0-1).
ResponseScorer = Callable[[str, ParsedOutput], RewardScore]


def combined_scorer(stage_judge: StageJudge, response_scorer: ResponseScorer) -> RolloutScorer:
    """Return the RL scorer made of a stage judge and a response scorer (e.g. ``response_reward_scorer``)."""

    def score(item_id: str, parsed: ParsedOutput) -> StageScores:
        stages = stage_judge(item_id, parsed)
        if stages is None:
            # No advantage will be drawn from this rollout: the reward model need not run.
            return StageScores(0.0, 0.0, 0.0, 0.0, 0.0, judge_failed=True)
        perception, reasoning, strategy = stages
        response = response_scorer(item_id, parsed)
        return StageScores(perception, reasoning, strategy, response.content, response.alignment)

    return score


@dataclass(frozen=True)
class RolloutGroup:
    """The G completions sampled for one prompt."""

    prompt: RlPrompt
    completions: tuple[str, ...]


def generate_rollouts(policy: SpeechLM, prompts: Sequence[RlPrompt], config: RlConfig) -> list[RolloutGroup]:
    """Return ``group_size`` sampled completions per prompt."""
    texts = policy.generate_batch(
        [prompt.speech_example() for prompt in prompts],
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
                judge_failed=stage.judge_failed,
            )
        )
    return scores


def mean_rewards(scores: Sequence[RolloutScores], config: SdcaConfig) -> dict[str, float]:
    """Return the mean of each reward and score over the judged rollouts (for the step's metrics);
    0 where no rollout was judged (``RlStepResult.metrics`` counts the ones left out)."""
    scores = [score for score in scores if not score.judge_failed]

    def mean(values: Sequence[float]) -> float:
        return float(np.mean(values)) if values else 0.0

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
