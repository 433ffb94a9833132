"""Automatic perception labels of a synthesised user turn, in the workbench label-document format.

Appendix B.3 annotates pitch, energy, rate, stress, intonation and intensity automatically. Here
pitch, energy and rate are levels against the same voice reading the same text neutrally (pitch
and energy from the project's acoustic analysis, rate in phones per second over speech only:
`speech_checks.rate_ratio`), intonation comes from the pitch contour, emotion and intensity are
the target the audio passed the consistency check with, and the caption puts it in words, with
the pauses heard. The stressed word is the one the query's writer named and the TTS was asked to
emphasise (eSpeak NG through SSML, a speech endpoint by instruction), kept only where the audio
was heard to stress it (`speech_checks.stressed_against_neutral`; the paper detects stress with
WhiStress): a label the audio does not carry would teach the wrong cue. A query without one has
none, which the label schema allows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ml.builder.logic.speech_checks import rate_ratio
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
    """Return {"pitch", "energy", "rate"} levels of a reading against the same voice reading the
    same text neutrally (`baseline`)."""
    f0, neutral_f0 = features.get("median_f0_hz"), baseline.get("median_f0_hz")
    energy, neutral_energy = features.get("mean_intensity_db"), baseline.get("mean_intensity_db")
    pitch_diff = 12.0 * math.log2(f0 / neutral_f0) if f0 and neutral_f0 else None
    ratio = rate_ratio(features, baseline)
    rate_diff = math.log(ratio) if ratio else None
    energy_diff = energy - neutral_energy if energy is not None and neutral_energy is not None else None
    return {
        "pitch": _level(pitch_diff, PITCH_STEP_SEMITONES),
        "energy": _level(energy_diff, ENERGY_STEP_DB),
        "rate": _level(rate_diff, math.log(RATE_STEP_RATIO)),
    }


def caption(levels: Mapping[str, str], intonation: str, emotion: str, intensity: str, pauses: int = 0) -> str:
    """Return a one-sentence prosody caption ("Fast, high-pitched speech with a rising contour ...")."""
    words = {"rate": {"high": "fast", "low": "slow"}, "pitch": {"high": "high-pitched", "low": "low-pitched"}}
    described = [words[name][levels[name]] for name in ("rate", "pitch") if levels.get(name) in words[name]]
    energy = {"high": "loud", "low": "quiet"}.get(levels.get("energy", ""), "")
    if energy:
        described.append(energy)
    manner = ", ".join(described) or "even"
    contour = f" with a {intonation} contour" if intonation else ""
    if pauses:
        contour += f"{' and' if contour else ' with'} {pauses} pause{'s' if pauses > 1 else ''}"
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
    pauses = int((features.get("pauses") or {}).get("count", 0))
    return {
        "polarity": POLARITY_OF.get(emotion, "neutral"),
        "emotion": emotion,
        "emotion_variant": emotion_variant,
        "intensity": intensity,
        **levels,
        "stressed_words": list(stressed_words),
        "intonation": intonation,
        "prosody_caption": caption(levels, intonation, emotion, intensity, pauses),
        "situation": situation,
        "modality_conflict": modality_conflict,
        "conflict_kind": "sarcasm" if modality_conflict else "",
        "emotion_segments": [],
    }


def perception_text(labels: Mapping[str, Any]) -> str:
    """Return the labels as the acoustic description an LLM and the perception span read."""
    return render_gold_perception(labels)
