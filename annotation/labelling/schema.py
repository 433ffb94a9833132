"""The shape of perception and Theory-of-Mind label documents, shared by annotation, gold, judges and training.

perception = {
    "polarity": "positive" | "negative" | "neutral" | "mixed",
    "emotion": one of webapp.lib.vocabulary.EMOTIONS, "emotion_variant": str,
    "intensity": "low" | "medium" | "high",
    "pitch": "low" | "normal" | "high", "energy": ..., "rate": ...,
    "stressed_words": [str, ...] (words of the script, in order),
    "intonation": "rising" | "falling" | "rising-falling" | "falling-rising" | "flat",
    "prosody_caption": str, "situation": str,
    "modality_conflict": bool, "conflict_kind": "" | "sarcasm" | "self-mockery" | "other",
    "emotion_segments": [{"start": s, "end": s, "emotion": str, "words": str}, ...] (emotion-shift items),
}
tom = {
    "context": str, "latent_need": str, "core_demand": str,
    "recommended_strategies": [strategy slug, ...], "not_recommended_strategies": [strategy slug, ...],
    "constraints": [str, ...],
}

An empty string (or empty list) means "not labelled yet": drafts are saved half-filled, and
`check_perception` / `check_tom` with `complete=True` say what a submission still lacks.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotation.audio.acoustics import WORD
from webapp.lib.vocabulary import (
    CONFLICT_KINDS,
    EMOTIONS,
    INTENSITIES,
    INTONATIONS,
    POLARITIES,
    PROSODY_LEVELS,
)

PERCEPTION_CATEGORICAL_FIELDS = ("polarity", "emotion", "intensity", "pitch", "energy", "rate", "intonation")
PERCEPTION_TEXT_FIELDS = ("emotion_variant", "prosody_caption", "situation")
PERCEPTION_SET_FIELDS = ("stressed_words",)
TOM_TEXT_FIELDS = ("context", "latent_need", "core_demand")
TOM_SET_FIELDS = ("recommended_strategies", "not_recommended_strategies", "constraints")

# Agreement levels: intensity and the prosody levels are ordered scales, the rest are names.
ORDINAL_SCALES: dict[str, tuple[str, ...]] = {
    "intensity": INTENSITIES,
    "pitch": PROSODY_LEVELS,
    "energy": PROSODY_LEVELS,
    "rate": PROSODY_LEVELS,
}
NOMINAL_FIELDS = ("polarity", "emotion", "intonation")

CHOICES: dict[str, tuple[str, ...]] = {
    "polarity": POLARITIES,
    "emotion": EMOTIONS,
    "intensity": INTENSITIES,
    "pitch": PROSODY_LEVELS,
    "energy": PROSODY_LEVELS,
    "rate": PROSODY_LEVELS,
    "intonation": INTONATIONS,
    "conflict_kind": CONFLICT_KINDS,
}

# Offered as one-click constraints on the workbench; annotators may write others.
SUGGESTED_CONSTRAINTS = (
    "over-analysis",
    "premature problem-solving",
    "minimising the feeling",
    "lecturing or moralising",
    "forced positivity",
    "changing the subject",
)

# The same word pattern as annotation.audio.acoustics counts for speaking rate ("don't" is one word).


# What people read for each field path ("perception.polarity" is for programs, never for pages).
FIELD_LABELS: dict[str, str] = {
    "perception.polarity": "Polarity",
    "perception.emotion": "Primary emotion",
    "perception.emotion_variant": "Fine-grained variant",
    "perception.intensity": "Intensity",
    "perception.pitch": "Pitch",
    "perception.energy": "Energy",
    "perception.rate": "Speaking rate",
    "perception.intonation": "Intonation",
    "perception.stressed_words": "Stressed words",
    "perception.prosody_caption": "Prosody caption",
    "perception.situation": "Situation",
    "perception.modality_conflict": "Text and voice conflict",
    "perception.conflict_kind": "Kind of conflict",
    "perception.emotion_segments": "Emotion segments",
    "tom.context": "Context understanding",
    "tom.latent_need": "Latent need",
    "tom.core_demand": "Core demand",
    "tom.recommended_strategies": "Recommended strategies",
    "tom.not_recommended_strategies": "Not-recommended strategies",
    "tom.constraints": "Constraints (styles to avoid)",
    # Later dialogue turns only (annotation.labelling.dialogue.cross_turn).
    "cross_turn": "Cross-turn labels",
    "cross_turn.emotion_change": "Emotion change since the last turn",
    "cross_turn.emotion_change_cause": "Cause of the change",
    "cross_turn.last_strategy_helped": "Did the last reply's strategy help?",
    "cross_turn.strategy_adaptation": "Strategy adaptation needed now",
    "cross_turn.adaptation_strategies": "Strategies for the adaptation",
}


def field_label(path: str) -> str:
    """Return the human name of a field path ("perception.polarity" -> "Polarity")."""
    return FIELD_LABELS.get(path) or path.rpartition(".")[2].replace("_", " ").capitalize()


@dataclass(frozen=True)
class LabelProblem:
    field: str  # "perception.polarity", "tom.recommended_strategies", ...
    message: str
    # Work in progress a draft may hold (a segment not given its emotion yet, an end typed before
    # its start): reported while autosaving, refused only on submit. Anything else is malformed.
    incomplete: bool = False

    @property
    def label(self) -> str:
        """The field's human name, for messages people read."""
        return field_label(self.field)

    def __str__(self) -> str:
        return f"{self.label}: {self.message}"


def script_words(text: str) -> list[str]:
    """Return the words of a script in order, as annotators pick stressed words from them."""
    return WORD.findall(text)


def empty_perception() -> dict[str, Any]:
    """Return a perception document with every field present and nothing labelled."""
    return {
        "polarity": "",
        "emotion": "",
        "emotion_variant": "",
        "intensity": "",
        "pitch": "",
        "energy": "",
        "rate": "",
        "stressed_words": [],
        "intonation": "",
        "prosody_caption": "",
        "situation": "",
        "modality_conflict": False,
        "conflict_kind": "",
        "emotion_segments": [],
    }


def empty_tom() -> dict[str, Any]:
    """Return a ToM document with every field present and nothing labelled."""
    return {
        "context": "",
        "latent_need": "",
        "core_demand": "",
        "recommended_strategies": [],
        "not_recommended_strategies": [],
        "constraints": [],
    }


def normalise_perception(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Return `raw` with every perception field present (missing ones empty) and unknown keys dropped."""
    document = empty_perception()
    for key in document:
        if key in raw and raw[key] is not None:
            document[key] = raw[key]
    return document


def normalise_tom(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Return `raw` with every ToM field present (missing ones empty) and unknown keys dropped."""
    document = empty_tom()
    for key in document:
        if key in raw and raw[key] is not None:
            document[key] = raw[key]
    return document


def check_perception(
    document: Mapping[str, Any],
    *,
    emotion_shift: bool = False,
    words: Sequence[str] | None = None,
    complete: bool = False,
) -> list[LabelProblem]:
    """Return what is wrong with a perception document (empty list: nothing).

    Values must come from their vocabularies and have the right types; stressed words must be
    words of the script when `words` is given. With `complete`, every categorical field, the
    caption and the situation must be filled, a modality conflict needs its kind, and an
    emotion-shift item needs at least two emotion segments.
    """
    problems: list[LabelProblem] = []

    def problem(field: str, message: str, incomplete: bool = False) -> None:
        problems.append(LabelProblem(f"perception.{field}", message, incomplete))

    for field, allowed in CHOICES.items():
        value = document.get(field, "")
        if not isinstance(value, str) or (value and value not in allowed):
            problem(field, f"{value!r} is not one of {', '.join(v for v in allowed if v)}")
        elif complete and not value and field != "conflict_kind":
            problem(field, "Choose a value.", True)
    for field in PERCEPTION_TEXT_FIELDS:
        value = document.get(field, "")
        if not isinstance(value, str):
            problem(field, "Must be text.")
        elif complete and field != "emotion_variant" and not value.strip():
            problem(field, "Write a few words.", True)
    if not isinstance(document.get("modality_conflict", False), bool):
        problem("modality_conflict", "Must be true or false.")
    elif complete and document.get("modality_conflict") and not document.get("conflict_kind"):
        problem("conflict_kind", "Say what kind of conflict (sarcasm, self-mockery, other).", True)
    problems.extend(_check_stressed_words(document.get("stressed_words", []), words))
    problems.extend(_check_segments(document.get("emotion_segments", []), emotion_shift, complete))
    return problems


def _check_stressed_words(value: object, words: Sequence[str] | None) -> list[LabelProblem]:
    field = "perception.stressed_words"
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        return [LabelProblem(field, "Must be a list of words.")]
    if words is not None:
        available = {word.lower() for word in words}
        strangers = [word for word in value if word.lower() not in available]
        if strangers:
            return [LabelProblem(field, f"Not words of the script: {', '.join(strangers)}")]
    return []


def _check_segments(value: object, emotion_shift: bool, complete: bool) -> list[LabelProblem]:
    field = "perception.emotion_segments"
    if not isinstance(value, list):
        return [LabelProblem(field, "Must be a list of segments.")]
    problems = []
    previous_end = -math.inf
    for number, segment in enumerate(value, start=1):
        if not isinstance(segment, Mapping):
            problems.append(LabelProblem(field, f"Segment {number} is not an object."))
            continue
        start, end = _as_seconds(segment.get("start")), _as_seconds(segment.get("end"))
        if start is None or end is None:
            problems.append(LabelProblem(field, f"Segment {number} needs a start and an end in seconds."))
            continue
        if not 0 <= start < end:
            problems.append(LabelProblem(field, f"Segment {number} needs a start before its end.", True))
            continue
        if start < previous_end - 1e-6:
            problems.append(LabelProblem(field, f"Segment {number} overlaps the one before it.", True))
        previous_end = end
        emotion = segment.get("emotion", "")
        if emotion == "":
            problems.append(LabelProblem(field, f"Segment {number} needs an emotion.", True))
        elif emotion not in EMOTIONS:
            problems.append(LabelProblem(field, f"Segment {number}: {emotion!r} is not an emotion."))
        if not isinstance(segment.get("words", ""), str):
            problems.append(LabelProblem(field, f"Segment {number}: words must be text."))
    if complete and emotion_shift and len(value) < 2:
        problems.append(LabelProblem(field, "Mark at least two emotion segments on the waveform.", True))
    return problems


def _as_seconds(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def check_tom(
    document: Mapping[str, Any], *, strategy_slugs: Collection[str] | None = None, complete: bool = False
) -> list[LabelProblem]:
    """Return what is wrong with a ToM document (empty list: nothing).

    Strategies must be slugs of the taxonomy when `strategy_slugs` is given, and no strategy may
    be both recommended and not recommended. With `complete`, the three text fields and at least
    one recommended strategy are required.
    """
    problems: list[LabelProblem] = []
    for field in TOM_TEXT_FIELDS:
        value = document.get(field, "")
        if not isinstance(value, str):
            problems.append(LabelProblem(f"tom.{field}", "Must be text."))
        elif complete and not value.strip():
            problems.append(LabelProblem(f"tom.{field}", "Write a few words.", True))
    lists: dict[str, list[str]] = {}
    for field in TOM_SET_FIELDS:
        value = document.get(field, [])
        if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
            problems.append(LabelProblem(f"tom.{field}", "Must be a list of text."))
            continue
        lists[field] = value
    for field in ("recommended_strategies", "not_recommended_strategies"):
        chosen = lists.get(field, [])
        if strategy_slugs is not None and (
            unknown := [slug for slug in chosen if slug not in strategy_slugs]
        ):
            problems.append(LabelProblem(f"tom.{field}", f"Unknown strategies: {', '.join(unknown)}"))
    both = set(lists.get("recommended_strategies", [])) & set(lists.get("not_recommended_strategies", []))
    if both:
        problems.append(
            LabelProblem(
                "tom.not_recommended_strategies", f"Both recommended and not: {', '.join(sorted(both))}"
            )
        )
    if complete and not lists.get("recommended_strategies"):
        problems.append(LabelProblem("tom.recommended_strategies", "Recommend at least one strategy.", True))
    return problems
