"""The reward model's training data (appendix D.1): a graded ladder of responses per user turn.

Per user turn, responses graded 0 (harmful or dismissive) to 5 (fully aligned), each spoken in the
style that fits the user's emotion (aligned), plus some rungs spoken in a mismatched style (not
aligned), so the content and alignment labels vary independently.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ml.core.reward.features import StyleSynthesizer, as_float_audio
from ml.core.reward.model import MAX_CONTENT_GRADE, RewardInput
from ml.core.speech.inputs import resample
from webapp.lib.vocabulary import ANGRY, DISGUST, FEAR, HAPPY, NEUTRAL, SAD, SURPRISE

# Appendix D.1's quality ladder; the descriptions double as instructions for an LLM that writes
# graded candidates (``RewardSourceItem.graded_responses``).
GRADE_LADDER: dict[int, str] = {
    0: "harmful or dismissive",
    1: "emotionally unaware",
    2: "generic or superficially empathetic",
    3: "partially appropriate but strategy-misaligned",
    4: "largely correct with minor flaws",
    5: "fully aligned, high-quality empathetic response",
}

# The speech style (output_format.SPEECH_STYLES) that fits each user emotion, and the one that
# clashes with it: appendix D.1's mismatches are e.g. an excited tone for a negative user state.
_FITTING_STYLE: dict[str, str] = {
    SAD: "comforting",
    FEAR: "comforting",
    ANGRY: "calm",
    DISGUST: "calm",
    NEUTRAL: "calm",
    HAPPY: "excited",
    SURPRISE: "excited",
}
_CLASHING_STYLE: dict[str, str] = {"comforting": "excited", "calm": "excited", "excited": "comforting"}
_POSITIVE_EMOTIONS = frozenset({HAPPY, SURPRISE})


@dataclass(frozen=True)
class RewardExample:
    """A training example: the input with its content grade (0-5) and audio-alignment label."""

    item_id: str
    inputs: RewardInput
    content_grade: float
    audio_aligned: bool
    response_style: str

    def __post_init__(self) -> None:
        if not 0 <= self.content_grade <= MAX_CONTENT_GRADE:
            raise ValueError(f"content_grade {self.content_grade} is outside [0, {MAX_CONTENT_GRADE}]")


@dataclass(frozen=True)
class RewardSourceItem:
    """A user turn the training ladder is built from (an accepted recording with its gold)."""

    item_id: str
    user_audio: np.ndarray
    sample_rate: int
    emotion: str
    # The grade-5 rung: the imported reference response.
    reference_response: str
    # Graded candidates written elsewhere (e.g. an LLM prompted with GRADE_LADDER); a grade
    # missing here falls back to a template rung derived from the reference.
    graded_responses: Mapping[int, str] = field(default_factory=dict)
    # The gold strategy's speech style; None means the style that fits the emotion.
    speech_style: str | None = None
    # What the user said and the gold strategies: what an LLM writing the ladder is shown.
    user_text: str = ""
    strategies: tuple[str, ...] = ()


def fitting_speech_style(emotion: str) -> str:
    """Return the speech style that suits a user emotion (calm for labels we do not know)."""
    return _FITTING_STYLE.get(emotion.strip().lower(), "calm")


def clashing_speech_style(style: str) -> str:
    """Return the speech style used as a mismatched delivery for responses meant in ``style``."""
    return _CLASHING_STYLE.get(style.strip().lower(), "excited")


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+", text.strip()) if part.strip()]


def _pick(options: Sequence[str], item_id: str, grade: int) -> str:
    # crc32 rather than hash(): the same item gets the same rung in every process.
    return options[zlib.crc32(f"{item_id}:{grade}".encode()) % len(options)]


_DISMISSIVE = (
    "Honestly, that is not a big deal. Stop overreacting and get over it.",
    "Nobody wants to hear about this. Deal with it yourself.",
    "That is your own fault, so I do not see why you are telling me.",
)
_UNAWARE = (
    "Okay. Is there anything else you need?",
    "Noted. Let me know if you want a reminder for anything.",
    "Right. What time is it where you are?",
)
_GENERIC = {
    "negative": (
        "I am sorry to hear that. Everything happens for a reason.",
        "That is too bad. I hope things get better.",
    ),
    "positive": ("That is nice.", "Good for you, I guess."),
}
_PREMATURE_ADVICE = {
    "negative": (
        "You should just move on and focus on something else.",
        "Just try not to think about it and stay busy.",
    ),
    "positive": ("Just do not get too carried away.", "Make sure you plan your next step right away."),
}
_MINOR_FLAW = ("Anyway, I am sure it will all work out.", "Things usually turn out fine in the end.")


def template_graded_responses(reference: str, emotion: str, item_id: str = "") -> dict[int, str]:
    """Return responses for grades 0-5 derived from the reference (grade 5) by templates.

    A stand-in for the paper's LLM augmentation so a ladder always exists; rungs 3 and 4 reuse
    the reference so the model must tell close responses apart, not just spot templates.
    """
    tone = "positive" if emotion.strip().lower() in _POSITIVE_EMOTIONS else "negative"
    sentences = _sentences(reference) or [reference.strip()]
    opening = sentences[0]
    without_last = " ".join(sentences[:-1]) if len(sentences) > 1 else opening
    return {
        0: _pick(_DISMISSIVE, item_id, 0),
        1: _pick(_UNAWARE, item_id, 1),
        2: _pick(_GENERIC[tone], item_id, 2),
        3: f"{opening} {_pick(_PREMATURE_ADVICE[tone], item_id, 3)}",
        4: f"{without_last} {_pick(_MINOR_FLAW, item_id, 4)}",
        5: reference.strip(),
    }


def build_reward_training_examples(
    items: Sequence[RewardSourceItem],
    synthesize: StyleSynthesizer,
    mismatched_grades: Sequence[int] = (5, 3, 1),
) -> list[RewardExample]:
    """Return appendix D.1's examples for each item.

    Every rung of the 0-5 ladder is spoken in the fitting style (aligned); the rungs in
    ``mismatched_grades`` are also spoken in the clashing style (not aligned), with the same
    content grade, so the two labels vary independently.
    """
    examples: list[RewardExample] = []
    for item in items:
        user_audio = resample(as_float_audio(item.user_audio), item.sample_rate)
        ladder = template_graded_responses(item.reference_response, item.emotion, item.item_id)
        ladder.update({grade: text for grade, text in item.graded_responses.items() if text.strip()})
        fitting = item.speech_style or fitting_speech_style(item.emotion)
        clashing = clashing_speech_style(fitting)
        for grade in range(MAX_CONTENT_GRADE + 1):
            text = ladder[grade]
            deliveries = [(fitting, True), *([(clashing, False)] if grade in mismatched_grades else [])]
            for style, aligned in deliveries:
                samples, sample_rate = synthesize(text, style)
                examples.append(
                    RewardExample(
                        item_id=item.item_id,
                        inputs=RewardInput(
                            user_audio=user_audio,
                            emotion=item.emotion,
                            response_text=text,
                            response_audio=resample(as_float_audio(samples), sample_rate),
                        ),
                        content_grade=float(grade),
                        audio_aligned=aligned,
                        response_style=style,
                    )
                )
    return examples
