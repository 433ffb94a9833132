"""Does the reward model, trained on a synthetic graded ladder, rank held-out responses? (``bench/reward_model_ranks.py``)

The ladder (appendix D.1's grades) is written here for the synthetic task's four emotions, with
four phrasings per rung so that some can be held out:

- 5: the emotion's gold response with a fitting follow-up;  4: a fitting reply with a flaw;
- 3: a reply that fits another emotion (strategy-misaligned);  2: generic;  1: unaware;
- 0: dismissive.

Each response is voiced by the TTS backend (``annotation.audio.tts``, eSpeak NG) in the style that
fits the user's emotion (aligned) or in the clashing one (not aligned). Training uses the training
voices' user turns and phrasings 0-2; evaluation uses the held-out voices, once with the training
phrasings and once with the held-out phrasing 3 (new wording, so a memorised sentence -> grade table
does not help there).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from annotation.audio.tts import speak_in_style
from ml.core.config import RewardModelConfig, RewardTrainingConfig
from ml.core.reward.ladder import RewardExample, clashing_speech_style, fitting_speech_style
from ml.core.reward.model import RewardInput, RewardModel, build_reward_model
from ml.core.reward.scoring import score_responses
from ml.core.reward.training import train_reward_model
from ml.core.speech.inputs import SAMPLE_RATE, resample
from ml.core.synthetic.prosody import EMOTIONS, GOLD, Utterance
from webapp.lib.vocabulary import ANGRY, HAPPY, NEUTRAL, SAD

PHRASINGS = 4
TRAIN_PHRASINGS = (0, 1, 2)
HELD_OUT_PHRASINGS = (3,)

_FOLLOW_UPS = ("Tell me more.", "I am listening.", "Go on, please.", "What happened next?")
_FITTING: dict[str, tuple[str, ...]] = {
    NEUTRAL: (
        "Okay, thanks for letting me know.",
        "Got it, thank you.",
        "Thanks, that is clear.",
        "Right, noted, thanks.",
    ),
    HAPPY: ("Wow, how wonderful!", "That is fantastic!", "Oh, I am so glad!", "Amazing, well done!"),
    SAD: ("I am so sorry.", "That sounds really hard.", "I am with you.", "That must hurt."),
    ANGRY: (
        "That is not fair to you.",
        "You have every right to be upset.",
        "I see why you are angry.",
        "That would annoy me too.",
    ),
}
_GENERIC = ("I see.", "That is something.", "Hmm, okay then.", "Well, things happen.")
_UNAWARE = (
    "What is the weather like?",
    "Do you like pizza?",
    "My favourite colour is blue.",
    "Let us talk about cars.",
)
_DISMISSIVE = ("Stop whining.", "Nobody cares about that.", "That is your own fault.", "Get over it already.")


def ladder_text(emotion: str, grade: int, phrasing: int) -> str:
    """Return the response of one grade (0-5) for a user in ``emotion``, in one of the phrasings."""
    if grade == 5:
        return f"{GOLD[emotion].response} {_FOLLOW_UPS[phrasing]}"
    if grade == 4:
        return _FITTING[emotion][phrasing]
    if grade == 3:
        other = EMOTIONS[(EMOTIONS.index(emotion) + 1 + phrasing % 3) % len(EMOTIONS)]
        return _FITTING[other][phrasing]
    return {2: _GENERIC, 1: _UNAWARE, 0: _DISMISSIVE}[grade][phrasing]


# (text, style) -> 16 kHz float32 audio; a bench voices the same few sentences many times.
Voice = Callable[[str, str], np.ndarray]


def cached_voice() -> Voice:
    """Return the TTS backend as (text, style) -> 16 kHz float32 audio, remembering what it said."""
    said: dict[tuple[str, str], np.ndarray] = {}

    def voice(text: str, style: str) -> np.ndarray:
        if (text, style) not in said:
            samples, rate = speak_in_style(text, style)
            said[text, style] = resample(np.asarray(samples, dtype=np.float32) / 32768.0, rate)
        return said[text, style]

    return voice


def ladder_examples(
    utterances: Sequence[Utterance],
    phrasings: Sequence[int],
    voice: Voice,
    rng: random.Random | None = None,
    mismatched_grades: Sequence[int] = (5, 3, 1),
) -> list[RewardExample]:
    """Return the graded examples of each user turn: every grade in the fitting style, the
    ``mismatched_grades`` also in the clashing style. With ``rng`` each rung takes one random
    phrasing from ``phrasings`` (training); without, every phrasing (evaluation)."""
    examples: list[RewardExample] = []
    for utterance in utterances:
        fitting = fitting_speech_style(utterance.emotion)
        clashing = clashing_speech_style(fitting)
        for grade in range(6):
            chosen = [rng.choice(phrasings)] if rng is not None else list(phrasings)
            deliveries = [(fitting, True), *([(clashing, False)] if grade in mismatched_grades else [])]
            for phrasing in chosen:
                text = ladder_text(utterance.emotion, grade, phrasing)
                for style, aligned in deliveries:
                    inputs = RewardInput(
                        user_audio=utterance.audio,
                        emotion=utterance.emotion,
                        response_text=text,
                        response_audio=voice(text, style),
                        user_sample_rate=SAMPLE_RATE,
                        response_sample_rate=SAMPLE_RATE,
                    )
                    examples.append(RewardExample(utterance.item_id, inputs, float(grade), aligned, style))
    return examples


@dataclass(frozen=True)
class RankingFigures:
    """How scores on one evaluation set agree with the truth."""

    spearman: float
    alignment_accuracy: float
    count: int


def ranking_figures(model: RewardModel, examples: Sequence[RewardExample]) -> RankingFigures:
    """Return Spearman of predicted content against the true grade, and alignment accuracy at 0.5."""
    scores = score_responses(model, [example.inputs for example in examples], batch_size=16)
    grades = [example.content_grade for example in examples]
    rho = float(spearmanr([score.content for score in scores], grades).statistic)
    correct = [(s.alignment >= 0.5) == e.audio_aligned for s, e in zip(scores, examples, strict=True)]
    return RankingFigures(spearman=rho, alignment_accuracy=float(np.mean(correct)), count=len(examples))


@dataclass(frozen=True)
class RewardOutcome:
    """One seed: figures on the held-out voices with seen and with held-out phrasings, before and after."""

    seed: int
    seen_before: RankingFigures
    seen_after: RankingFigures
    new_before: RankingFigures
    new_after: RankingFigures


# Every utterance's audio is at most about 2.4 s; comforting responses are the slowest.
REWARD_MODEL = RewardModelConfig(backbone="tiny", tiny_audio_seconds=3)


def run_reward(
    train: Sequence[Utterance], test: Sequence[Utterance], seed: int, steps: int, voice: Voice
) -> RewardOutcome:
    """Train a fresh tiny reward model for ``steps`` steps of 8 on the training ladder; evaluate."""
    model = build_reward_model(REWARD_MODEL, seed=seed)
    training = ladder_examples(train, TRAIN_PHRASINGS, voice, rng=random.Random(seed))
    seen = ladder_examples(test, TRAIN_PHRASINGS[:1], voice)
    new = ladder_examples(test, HELD_OUT_PHRASINGS, voice)
    seen_before, new_before = ranking_figures(model, seen), ranking_figures(model, new)
    config = RewardTrainingConfig(max_steps=steps, batch_size=8, learning_rate=1e-3, seed=seed)
    train_reward_model(model, training, config)
    return RewardOutcome(
        seed, seen_before, ranking_figures(model, seen), new_before, ranking_figures(model, new)
    )
