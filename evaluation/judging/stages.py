"""What each rubric stage of an output is scored on, by a judge or by an evaluator's hand.

The same inputs go to the LLM judges (`evaluation.judging.runs`) and to evaluators scoring by hand
(`evaluation.judging.human_scoring`), so the judge-human agreement compares like with like.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotation.gold.models import GoldReference
from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
    RubricError,
)
from evaluation.outputs.models import ModelOutput
from webapp.lib.vocabulary import EMOTION_SHIFT

# Perception facts the audio judge compares the voice with.
_AUDIO_GOLD_FIELDS = ("emotion", "emotion_variant", "intensity", "polarity", "prosody_caption")


def applicable_stages(scenario: str, text_only: bool, *, listens: bool = True) -> tuple[str, ...]:
    """Return the rubric stages an output is scored on: shift perception replaces perception on
    emotion-shift items; the audio stage needs speech output and a scorer who hears it (a judge
    without `attach_audio` would score every voice from the same text, so it does not score audio)."""
    perception = SHIFT_PERCEPTION if scenario == EMOTION_SHIFT else PERCEPTION
    stages = (perception, REASONING, RESPONSE_CONTENT)
    return stages if text_only or not listens else (*stages, RESPONSE_AUDIO)


@dataclass(frozen=True)
class StageInput:
    shown: str | dict[str, Any]  # what the judge reads as the model output
    flag_input: str | Mapping[str, object] | None  # what automatic_flags inspects
    gold: dict[str, Any]


def stage_input(
    output: ModelOutput, gold: GoldReference, stage: str, audio: tuple[bytes, str] | None = None
) -> StageInput:
    """Return what the judge sees for one stage of an output, and the gold part it is compared with.

    `audio` is (bytes, format) of the response audio when the judge should listen to it.
    """
    # The reference carries what the user said: the judge cannot score understanding without it.
    said = {"user_utterance": output.item.text}
    if stage in (PERCEPTION, SHIFT_PERCEPTION):
        return StageInput(output.perception_text, output.perception_text, {**said, **gold.perception})
    if stage == REASONING:
        parts = [part for part in (output.reasoning_text, output.strategy_text) if part.strip()]
        shown: str | dict[str, Any] = "\n\n".join(parts)
        if not parts and output.reasoning_fields:
            shown = dict(output.reasoning_fields)
        # Field-level flags (missing fields, strategy overlap) need the parsed fields; free text
        # without them is only checked for being empty.
        flag_input: str | Mapping[str, object] | None = output.reasoning_fields or shown or None
        return StageInput(shown, flag_input, {**said, **gold.tom})
    if stage == RESPONSE_CONTENT:
        reference = {**said, **gold.tom}
        if gold.reference_response:
            reference["reference_response"] = gold.reference_response
        return StageInput(output.response_text, output.response_text, reference)
    if stage == RESPONSE_AUDIO:
        audio_gold = {
            **said,
            **{name: gold.perception[name] for name in _AUDIO_GOLD_FIELDS if name in gold.perception},
        }
        shown_audio: dict[str, Any] = {"response_text": output.response_text}
        if audio is not None:
            shown_audio["audio_base64"] = base64.b64encode(audio[0]).decode("ascii")
            shown_audio["audio_format"] = audio[1]
        # No audio at all is unintelligible by definition, whatever the judge makes of the text.
        return StageInput(shown_audio, output.response_audio_key or None, audio_gold)
    raise RubricError(f"unknown stage {stage!r}")
