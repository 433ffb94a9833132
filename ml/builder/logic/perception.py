"""Automatic perception labels of a synthesised user turn, in the workbench label-document format.

Appendix B.3 annotates pitch, energy, rate, stress, intonation and intensity automatically. Here
pitch, energy and rate are levels against the same voice speaking neutrally (the measurement
is the project's acoustic analysis), intonation comes from the pitch contour, emotion and
intensity are the target the audio passed the consistency check with, and the caption puts it in
words. The stressed word comes from construction, not detection (the paper detects stress with
WhiStress): the query's writer names it and the TTS speaks it with emphasis. eSpeak NG does so
through SSML; a speech endpoint is asked to, and whether it complied is not checked. A query
without one has none, which the label schema allows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ml.core.training_records import render_gold_perception
from webapp.lib.vocabulary import ANGRY, DISGUST, FEAR, HAPPY, NEUTRAL, SAD, SURPRISE

POLARITY_OF: dict[str, str] = {
    HAPPY: "positive",
    SURPRISE: "mixed",
    SAD: "negative",
    ANGRY: "negative",
    FEAR: "negative",
    DISGUST: "negative",
    NEUTRAL: "neutral",
}
PITCH_STEP_SEMITONES = 2.0
RATE_STEP_RATIO = 1.15
ENERGY_STEP_DB = 3.0


def _level(difference: float | None, step: float) -> str:
    if difference is None:
        return ""
    return "high" if difference >= step else "low" if difference <= -step else "normal"


def prosody_levels(features: Mapping[str, Any], baseline: Mapping[str, Any]) -> dict[str, str]:
    """Return {"pitch", "energy", "rate"} levels of a take against the voice's neutral reading."""
    f0, neutral_f0 = features.get("median_f0_hz"), baseline.get("median_f0_hz")
    rate, neutral_rate = features.get("words_per_second"), baseline.get("words_per_second")
    energy, neutral_energy = features.get("mean_intensity_db"), baseline.get("mean_intensity_db")
    pitch_diff = 12.0 * math.log2(f0 / neutral_f0) if f0 and neutral_f0 else None
    rate_diff = math.log(rate / neutral_rate) if rate and neutral_rate else None
    energy_diff = energy - neutral_energy if energy is not None and neutral_energy is not None else None
    return {
        "pitch": _level(pitch_diff, PITCH_STEP_SEMITONES),
        "energy": _level(energy_diff, ENERGY_STEP_DB),
        "rate": _level(rate_diff, math.log(RATE_STEP_RATIO)),
    }


def caption(levels: Mapping[str, str], intonation: str, emotion: str, intensity: str) -> str:
    """Return a one-sentence prosody caption ("Fast, high-pitched speech with a rising contour ...")."""
    words = {"rate": {"high": "fast", "low": "slow"}, "pitch": {"high": "high-pitched", "low": "low-pitched"}}
    described = [words[name][levels[name]] for name in ("rate", "pitch") if levels.get(name) in words[name]]
    energy = {"high": "loud", "low": "quiet"}.get(levels.get("energy", ""), "")
    if energy:
        described.append(energy)
    manner = ", ".join(described) or "even"
    contour = f" with a {intonation} contour" if intonation else ""
    return f"{manner.capitalize()} speech{contour}, conveying {intensity} {emotion}"


def perception_labels(
    features: Mapping[str, Any],
    baseline: Mapping[str, Any],
    *,
    emotion: str,
    emotion_variant: str,
    intensity: str,
    situation: str,
    modality_conflict: bool,
    stressed_words: Sequence[str] = (),
) -> dict[str, Any]:
    """Return a complete perception label document for one synthesised turn."""
    levels = prosody_levels(features, baseline)
    intonation = str(features.get("intonation") or "")
    return {
        "polarity": POLARITY_OF.get(emotion, "neutral"),
        "emotion": emotion,
        "emotion_variant": emotion_variant,
        "intensity": intensity,
        **levels,
        "stressed_words": list(stressed_words),
        "intonation": intonation,
        "prosody_caption": caption(levels, intonation, emotion, intensity),
        "situation": situation,
        "modality_conflict": modality_conflict,
        "conflict_kind": "sarcasm" if modality_conflict else "",
        "emotion_segments": [],
    }


def perception_text(labels: Mapping[str, Any]) -> str:
    """Return the labels as the acoustic description an LLM and the perception span read."""
    return render_gold_perception(labels)
