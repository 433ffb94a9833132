"""Does RL from the SFT checkpoint raise the reward on the synthetic task? (``bench/rl_learns.py``)

The stage scorer is rule-based against the synthetic gold (``synthetic_stage_scorer``):

- s1 perception: 1 when the perception names the spoken emotion, else 0;
- s2 reasoning: the share of the four theory-of-mind fields equal to the gold ones;
- s3 strategy: the Jaccard overlap of the strategy names with the gold ones;
- content: 5 x word F1 of the response against the gold response;
- audio alignment: 1 when the declared speech style is the fitting one, else 0.

Mean reward is measured on the held-out speakers, and on a fixed third of the training speakers'
utterances (``seen``: what RL was rewarded on): ``samples`` completions per utterance, sampled at
the rollout temperature (0.5; the quantity RL maximises), with each stage's mean score alongside.
Before and after use the same seed, prompts and temperature, so they differ only by the weights.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ml.core.config import RlConfig
from ml.core.rl.heuristic import word_f1
from ml.core.rl.rollouts import RlPrompt, RolloutScorer, StageScores, mean_rewards, score_rollouts
from ml.core.rl.training import train_rl
from ml.core.runtime import seed_everything
from ml.core.speech.inputs import SAMPLE_RATE
from ml.core.speech.model import SpeechLM
from ml.core.synthetic.prosody import PROMPT, Gold, Utterance
from ml.core.synthetic.sft_probe import heard_emotion, perception_accuracy
from webapp.lib.output_format import ParsedOutput, parse_reasoning_fields, parse_strategy_fields

# Room for the longest gold output (about 155 tokens) and a little more.
MAX_NEW_TOKENS = 176
_EVAL_BATCH = 12
# At 1.0 the briefly trained tiny model samples mostly malformed text (its greedy output is fine);
# at 0.5 about 70% of samples are well formed, which leaves the group both signal and room to improve.
ROLLOUT_TEMPERATURE = 0.5
# Adam moves every weight by about the learning rate each step whatever the gradient's size, so a
# noisy gradient is a random walk: with 2 prompts x 4 rollouts a step, 20 steps at 3e-5 lowered the
# held-out reward (0.668 -> 0.645 on seed 0) about as much as flipping a random sign of 6e-4 onto
# every weight does (-> 0.641). 8 prompts x 8 rollouts give a gradient that can beat that noise;
# at 1e-4, RL on one prompt alone (16 rollouts a step) takes its reward from 0.16 to 0.90 in 20 steps.
LEARNING_RATE = 1e-4
GROUP_SIZE = 8
PROMPTS_PER_STEP = 8


class GoldItem(Protocol):
    """What the scorer reads of an item (``Utterance`` here, ``ConflictItem`` of the conflict task)."""

    @property
    def item_id(self) -> str: ...
    @property
    def emotion(self) -> str: ...
    @property
    def gold(self) -> Gold: ...


def _normalised(text: str) -> str:
    return " ".join(text.lower().strip().rstrip(".").split())


def synthetic_stage_scorer(utterances: Sequence[GoldItem]) -> RolloutScorer:
    """Return the rule-based scorer of rollouts for these utterances (module docstring)."""
    by_id = {utterance.item_id: utterance for utterance in utterances}

    def score(item_id: str, parsed: ParsedOutput) -> StageScores:
        utterance = by_id[item_id]
        gold = utterance.gold
        fields = parse_reasoning_fields(parsed.span_text("reasoning"))
        gold_fields = {
            "context": gold.context,
            "latent_need": gold.latent_need,
            "core_demand": gold.core_demand,
            "constraints": gold.constraints,
        }
        matched = sum(
            _normalised(fields.get(key, "")) == _normalised(value) for key, value in gold_fields.items()
        )
        strategy = parse_strategy_fields(parsed.span_text("strategy"))
        wanted = {_normalised(name) for name in gold.strategies}
        chosen = set(strategy.strategies)
        return StageScores(
            perception=float(heard_emotion(parsed.span_text("perception")) == utterance.emotion),
            reasoning=matched / len(gold_fields),
            strategy=len(wanted & chosen) / len(wanted | chosen),
            content=5.0 * word_f1(parsed.span_text("response"), gold.response),
            audio_alignment=float(strategy.speech_style == gold.speech_style),
        )

    return score


def rl_prompts(utterances: Sequence[Utterance]) -> list[RlPrompt]:
    """Return the utterances as RL prompts."""
    return [RlPrompt(u.item_id, u.audio, SAMPLE_RATE, PROMPT) for u in utterances]


def rl_config(mode: str, seed: int, steps: int) -> RlConfig:
    """Return the probe's RL settings: full fine-tuning of the tiny model, 8 prompts x 8 rollouts a step."""
    return RlConfig(
        mode=mode,  # type: ignore[arg-type]
        group_size=GROUP_SIZE,
        prompts_per_step=PROMPTS_PER_STEP,
        max_steps=steps,
        learning_rate=LEARNING_RATE,
        kl_coef=0.01,
        max_new_tokens=MAX_NEW_TOKENS,
        temperature=ROLLOUT_TEMPERATURE,
        lora=None,
        seed=seed,
    )


def expected_reward(
    speech_lm: SpeechLM, utterances: Sequence[Utterance], config: RlConfig, samples: int, seed: int
) -> dict[str, float]:
    """Return mean rewards and stage scores over ``samples`` sampled completions per utterance,
    plus the greedy perception accuracy."""
    scorer = synthetic_stage_scorer(utterances)
    seed_everything(seed)
    scores = []
    for start in range(0, len(utterances), _EVAL_BATCH):
        chunk = utterances[start : start + _EVAL_BATCH]
        texts = speech_lm.generate_batch(
            [(u.audio, PROMPT) for u in chunk],
            max_new_tokens=config.max_new_tokens,
            do_sample=True,
            temperature=config.temperature,
            num_return_sequences=samples,
        )
        for utterance, completions in zip(chunk, texts, strict=True):
            scores.extend(score_rollouts(utterance.item_id, completions, scorer))
    rewards = mean_rewards(scores, config.sdca)
    rewards["greedy_accuracy"] = perception_accuracy(speech_lm, utterances)
    return rewards


@dataclass(frozen=True)
class RlOutcome:
    """One RL run from the SFT checkpoint: held-out rewards before and after, and the same on
    training speakers' utterances (``seen_*``, empty when none were measured)."""

    seed: int
    mode: str
    before: dict[str, float]
    after: dict[str, float]
    seen_before: dict[str, float]
    seen_after: dict[str, float]


def run_rl(
    start: SpeechLM,
    train: Sequence[Utterance],
    test: Sequence[Utterance],
    mode: str,
    seed: int,
    steps: int,
    samples: int,
    before: dict[str, float] | None = None,
    seen: Sequence[Utterance] = (),
) -> RlOutcome:
    """Train a copy of ``start`` with RL on ``train`` (its own frozen copy as the KL reference);
    measure ``test`` and ``seen`` (a part of ``train``) before and after."""
    config = rl_config(mode, seed, steps)
    if before is None:
        before = expected_reward(start, test, config, samples, seed)
    seen_before = expected_reward(start, seen, config, samples, seed) if seen else {}
    policy = copy.deepcopy(start)
    reference = copy.deepcopy(start)
    train_rl(policy, reference, rl_prompts(train), synthetic_stage_scorer(train), config)
    after = expected_reward(policy, test, config, samples, seed)
    seen_after = expected_reward(policy, seen, config, samples, seed) if seen else {}
    return RlOutcome(seed, mode, before, after, seen_before, seen_after)
