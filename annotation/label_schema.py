"""The shape of perception and Theory-of-Mind label documents, shared by annotation, gold, judges and training.

perception = {
    "polarity": "positive" | "negative" | "neutral" | "mixed",
    "emotion": one of annotation.models.Emotion, "emotion_variant": str,
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
"""

from __future__ import annotations

POLARITIES = ("positive", "negative", "neutral", "mixed")
LEVELS = ("low", "normal", "high")
INTENSITIES = ("low", "medium", "high")
INTONATIONS = ("rising", "falling", "rising-falling", "falling-rising", "flat")
CONFLICT_KINDS = ("", "sarcasm", "self-mockery", "other")

PERCEPTION_CATEGORICAL_FIELDS = ("polarity", "emotion", "intensity", "pitch", "energy", "rate", "intonation")
PERCEPTION_TEXT_FIELDS = ("emotion_variant", "prosody_caption", "situation")
TOM_TEXT_FIELDS = ("context", "latent_need", "core_demand")
TOM_SET_FIELDS = ("recommended_strategies", "not_recommended_strategies", "constraints")

DEFAULT_STRATEGIES: tuple[tuple[str, str], ...] = (
    ("emotional-validation", "Emotional validation"),
    ("reassurance", "Reassurance"),
    ("reflection-of-feelings", "Reflection of feelings"),
    ("questioning", "Questioning"),
    ("restatement", "Restatement"),
    ("self-disclosure", "Self-disclosure"),
    ("information", "Information"),
    ("suggestions-guidance", "Suggestions / guidance"),
    ("cognitive-reframing", "Cognitive reframing"),
)
