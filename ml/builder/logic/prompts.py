"""The builder's LLM prompts (appendix B, figures 7-10), each asking for one JSON object.

Every prompt is a system message (fixed per stage and variant; its sha256 goes into the export's
provenance) and a user message with the sample's facts. ``prompt_hashes`` names the templates a
build ran with, so a record can be traced to the exact wording.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ml.builder.stages import (
    HIGH_AROUSAL,
    MODALITY_CONFLICT,
    ROLE_PLAY,
    SCENARIO_RICH,
    STANDARD,
    TEXT_NEUTRAL,
)
from webapp.lib.output_format import SPEECH_STYLES
from webapp.lib.vocabulary import DEFAULT_STRATEGIES, EMOTIONS, INTENSITIES

Messages = list[dict[str, Any]]

VARIANT_INSTRUCTIONS: dict[str, str] = {
    STANDARD: "Write a natural empathetic query: the user expresses the emotion the way people usually do.",
    SCENARIO_RICH: "Write a query rich in concrete context: who, where, what happened, what is at stake.",
    ROLE_PLAY: "Write in the voice of a specific person (invent an age, job and way of speaking) in role.",
    HIGH_AROUSAL: "Write a query in an intense emotional state: short bursts, urgency, strong feeling.",
    TEXT_NEUTRAL: (
        "Write a query whose words are emotionally neutral (facts only): the emotion will be carried "
        "by the voice alone."
    ),
    MODALITY_CONFLICT: (
        "Write a sarcastic or self-mocking query: the words say the opposite of the feeling, which "
        "the voice will reveal."
    ),
}

QUERY_SYSTEM = (
    "You write what a user says aloud to an empathetic voice assistant, for a speech training corpus. "
    "One or two spoken sentences, first person, about 24 words, no stage directions, no emojis. "
    'Answer with JSON: {"query": "...", "emotion_variant": "a fine-grained name of the emotion", '
    '"stressed_word": "the one word of the query the speaker stresses most, as written, or empty"}.'
)
TRAJECTORY_SYSTEM = (
    "You plan a five-turn spoken conversation between a user and an empathetic assistant. Give, per "
    "turn, the user's emotion and intensity and the assistant's strategy, with a one-line beat of what "
    "happens. Keep one topic, change emotions smoothly (no jump from low to high intensity in one turn) "
    "and follow a psychologically plausible arc (for example distress, validation, gradual "
    f"stabilisation). Emotions: {', '.join(EMOTIONS)}. Intensities: {', '.join(INTENSITIES)}. "
    'Answer with JSON: {"turns": [{"turn": 1, "emotion": "...", "intensity": "...", '
    '"strategy": "...", "beat": "..."}, ...]}.'
)
QUERY_FILTER_SYSTEM = (
    "You screen user queries for an empathetic speech corpus. Score each criterion from 1 (fails) to 5 "
    "(excellent): empathy_interpretability (the feeling and need can be understood), non_triviality "
    "(more than chit-chat), emotion_consistency (the text fits the target emotion, intensity and "
    "variant; for text-neutral and modality-conflict variants the words may hide it), coherence, "
    "self_sufficiency (understandable without further context). Also say whether it contains or "
    "implies harmful content: self-harm intent or a credible threat to others. "
    'Answer with JSON: {"scores": {"empathy_interpretability": n, "non_triviality": n, '
    '"emotion_consistency": n, "coherence": n, "self_sufficiency": n}, "harmful": false, '
    '"harm_kind": "" | "self_harm_intent" | "credible_threat" | "other_harm", "reason": "..."}.'
)
RESPONSE_SYSTEM = (
    "You are an empathetic voice assistant. Reason in three steps before answering. (1) Perception: "
    "what the user's voice and words convey, grounded in the acoustic description given. (2) Mental "
    "state (theory of mind): context, latent need, core demand, and constraints (styles to avoid). "
    "(3) Strategy: the support strategies to use and to avoid (from: "
    f"{', '.join(name for _, name in DEFAULT_STRATEGIES)}), and a speech style for your spoken "
    f"reply, one of {', '.join(SPEECH_STYLES)}. Then reply in 2-4 spoken sentences. "
    'Answer with JSON: {"perception": "...", "context": "...", "latent_need": "...", '
    '"core_demand": "...", "constraints": ["..."], "recommended_strategies": ["..."], '
    '"not_recommended_strategies": ["..."], "speech_style": "comforting|calm|excited", "response": "..."}.'
)
RESPONSE_FILTER_SYSTEM = (
    "You check an empathetic assistant's reasoning and reply. Score each criterion from 1 to 5: "
    "structure_complete (perception, mental state and strategy all present), grounded_in_perception "
    "(the mental state follows from what was perceived, not generic), strategy_consistent (the reply "
    "uses the chosen strategies and avoids the rejected ones), style_consistent (the speech style fits "
    "the user's state and the reply), response_appropriate (empathetic, safe, not dismissive). "
    'Answer with JSON: {"scores": {"structure_complete": n, "grounded_in_perception": n, '
    '"strategy_consistent": n, "style_consistent": n, "response_appropriate": n}, "reason": "..."}.'
)


@dataclass(frozen=True)
class Exchange:
    """One earlier turn as a later prompt sees it."""

    turn: int
    user: str
    assistant: str = ""
    planned_strategy: str = ""


def _json(values: dict[str, Any]) -> str:
    return json.dumps(values, ensure_ascii=False, sort_keys=True)


def _history(history: Sequence[Exchange]) -> list[dict[str, Any]]:
    return [
        {"turn": entry.turn, "user": entry.user, "assistant": entry.assistant or entry.planned_strategy}
        for entry in history
    ]


def trajectory_messages(
    request_id: str, topic_path: str, emotion: str, intensity: str, variant: str, turns: int
) -> Messages:
    """Return the prompt planning one dialogue's trajectory."""
    facts: dict[str, Any] = {"request": request_id, "topic": topic_path, "opening_emotion": emotion}
    facts.update(opening_intensity=intensity, turns=turns)
    facts["style"] = VARIANT_INSTRUCTIONS[variant]
    return [{"role": "system", "content": TRAJECTORY_SYSTEM}, {"role": "user", "content": _json(facts)}]


def query_messages(
    request_id: str,
    topic_path: str,
    emotion: str,
    intensity: str,
    variant: str,
    *,
    turn: int = 0,
    beat: str = "",
    history: Sequence[Exchange] = (),
) -> Messages:
    """Return the prompt writing one user query (a dialogue turn continues its history).

    The request id (the sample's external id) makes each sample's prompt its own: two samples
    planned alike must still get two queries, not one stored answer twice.
    """
    facts: dict[str, Any] = {
        "request": request_id,
        "topic": topic_path,
        "emotion": emotion,
        "intensity": intensity,
        "variant": variant,
        "instruction": VARIANT_INSTRUCTIONS[variant],
    }
    if turn:
        facts.update(turn=turn, beat=beat, history=_history(history))
    return [{"role": "system", "content": QUERY_SYSTEM}, {"role": "user", "content": _json(facts)}]


def query_filter_messages(text: str, emotion: str, intensity: str, variant: str) -> Messages:
    """Return the prompt screening one query for quality and safety."""
    facts = {"query": text, "emotion": emotion, "intensity": intensity, "variant": variant}
    return [{"role": "system", "content": QUERY_FILTER_SYSTEM}, {"role": "user", "content": _json(facts)}]


def response_messages(
    request_id: str,
    text: str,
    perception: str,
    *,
    planned_strategy: str = "",
    history: Sequence[Exchange] = (),
) -> Messages:
    """Return the three-step reasoning and response prompt for one user turn (its own, like queries)."""
    facts: dict[str, Any] = {"request": request_id, "user_said": text, "acoustic_description": perception}
    if history:
        facts["history"] = _history(history)
    if planned_strategy:
        facts["planned_strategy"] = planned_strategy
    return [{"role": "system", "content": RESPONSE_SYSTEM}, {"role": "user", "content": _json(facts)}]


def response_filter_messages(text: str, perception: str, output: str) -> Messages:
    """Return the prompt checking one reasoning trace and reply."""
    facts = {"user_said": text, "acoustic_description": perception, "assistant_output": output}
    return [{"role": "system", "content": RESPONSE_FILTER_SYSTEM}, {"role": "user", "content": _json(facts)}]


def prompt_hashes() -> dict[str, str]:
    """Return {template name: sha256 prefix} of every system prompt and variant instruction."""
    templates = {
        "trajectory": TRAJECTORY_SYSTEM,
        "query": QUERY_SYSTEM,
        "query_filter": QUERY_FILTER_SYSTEM,
        "response": RESPONSE_SYSTEM,
        "response_filter": RESPONSE_FILTER_SYSTEM,
        **{f"variant:{name}": text for name, text in VARIANT_INSTRUCTIONS.items()},
    }
    return {name: hashlib.sha256(text.encode()).hexdigest()[:16] for name, text in templates.items()}
