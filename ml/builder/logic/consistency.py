"""Is the user audio consistent with its target emotion? A pluggable check, with an offline default.

The paper keeps only audio on which two emotion classifiers (emotion2vec, a WavLM model) agree with
high confidence. Offline we have no such model, so ``acoustic_verdict`` is a much weaker stand-in
built from this project's acoustic analysis: it hears *arousal* only (speaking rate in phones per
second and pitch against the same voice reading the same text neutrally), so it can tell a sad delivery from an angry one but not
anger from joy. It is labelled ``method="acoustic-arousal (weaker)"`` wherever it is stored.
``EndpointClassifier`` asks an OpenAI-compatible audio chat endpoint for the emotion and a
confidence instead, and ``local_classifier.LocalModelClassifier`` runs a local transformers model.

The paper's joint rule is ``joint_verdict``: with a second check configured
(``BuildConfig.consistency_joint_method``: two classifiers, or a classifier and the acoustic
check), a sample is kept only when every check hears it as consistent and the least confident of
them reaches the build's confidence threshold.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ml.builder.logic.speech_checks import rate_ratio
from ml.builder.logic.voicing import target_arousal
from webapp.lib.llm_client import JudgeClient

ACOUSTIC_METHOD = "acoustic-arousal (weaker)"
# Arousal bands a listener can tell apart from prosody alone.
LOW_AROUSAL, MID_AROUSAL, HIGH_AROUSAL = "low", "mid", "high"
BAND_EDGES = (-0.2, 0.3)  # below: low; above: high
# How many arousal units one doubling of speaking rate, and of pitch, is worth.
RATE_WEIGHT = 1.2
PITCH_WEIGHT = 1.0
# Confidence reaches 1 this far (in arousal units) inside the band.
CONFIDENT_MARGIN = 0.25


@dataclass(frozen=True)
class ConsistencyVerdict:
    method: str
    expected: str
    predicted: str
    confidence: float
    consistent: bool
    scores: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def arousal_band(arousal: float) -> str:
    """Return the band an arousal value falls in."""
    low, high = BAND_EDGES
    return LOW_AROUSAL if arousal < low else HIGH_AROUSAL if arousal > high else MID_AROUSAL


def _margin(arousal: float, band: str) -> float:
    low, high = BAND_EDGES
    if band == LOW_AROUSAL:
        return low - arousal
    if band == HIGH_AROUSAL:
        return arousal - high
    return min(arousal - low, high - arousal)


def measured_arousal(features: Mapping[str, Any], baseline: Mapping[str, Any]) -> float | None:
    """Return the arousal heard in a reading's features against the same voice reading the same
    text neutrally (`baseline`)."""
    ratio = rate_ratio(features, baseline)
    f0, neutral_f0 = features.get("median_f0_hz"), baseline.get("median_f0_hz")
    if not ratio or not f0 or not neutral_f0:
        return None
    return RATE_WEIGHT * math.log2(ratio) + PITCH_WEIGHT * math.log2(f0 / neutral_f0)


def acoustic_verdict(
    features: Mapping[str, Any], baseline: Mapping[str, Any], emotion: str, intensity: str
) -> ConsistencyVerdict:
    """Return the offline verdict: does the heard arousal band match the target's, and how surely."""
    expected = arousal_band(target_arousal(emotion, intensity))
    arousal = measured_arousal(features, baseline)
    if arousal is None:
        return ConsistencyVerdict(ACOUSTIC_METHOD, expected, "", 0.0, False, {})
    predicted = arousal_band(arousal)
    confidence = max(0.0, min(1.0, 0.5 + 0.5 * _margin(arousal, predicted) / CONFIDENT_MARGIN))
    return ConsistencyVerdict(
        ACOUSTIC_METHOD,
        expected,
        predicted,
        round(confidence, 3),
        predicted == expected,
        {"arousal": arousal},
    )


JOINT_PREFIX = "joint"


def joint_verdict(verdicts: Sequence[ConsistencyVerdict]) -> ConsistencyVerdict:
    """Return the joint verdict of several checks: consistent only when all are, as confident as
    the least confident (so a threshold on it holds for each), each check's own verdict kept."""
    if not verdicts:
        raise ValueError("a joint verdict needs at least one check")
    if len(verdicts) == 1:
        return verdicts[0]
    return ConsistencyVerdict(
        method=f"{JOINT_PREFIX}({' + '.join(verdict.method for verdict in verdicts)})",
        expected=" / ".join(verdict.expected for verdict in verdicts),
        predicted=" / ".join(verdict.predicted or "nothing" for verdict in verdicts),
        confidence=min(verdict.confidence for verdict in verdicts),
        consistent=all(verdict.consistent for verdict in verdicts),
        scores={
            f"{verdict.method}:{name}": value
            for verdict in verdicts
            for name, value in verdict.scores.items()
        }
        | {f"{verdict.method}:confidence": verdict.confidence for verdict in verdicts},
    )


class EmotionClassifier(Protocol):
    """A pluggable consistency check: the heard emotion and how sure, against the target."""

    def verdict(self, wav: bytes, emotion: str) -> ConsistencyVerdict: ...


class EndpointClassifier:
    """An emotion classifier behind an OpenAI-compatible chat endpoint that accepts input_audio."""

    method = "endpoint"

    def __init__(self, client: JudgeClient) -> None:
        self.client = client

    def verdict(self, wav: bytes, emotion: str) -> ConsistencyVerdict:
        """Return the endpoint's emotion and confidence for the audio, compared with the target."""
        audio = base64.b64encode(wav).decode()
        messages = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": 'Which emotion does the speaker express? JSON: {"emotion": "...", "confidence": 0-1}',
                    },
                    {"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}},
                ],
            }
        ]
        reply = self.client.complete_json(messages)
        data = reply.data or {}
        predicted = str(data.get("emotion") or "").strip().lower()
        try:
            confidence = max(0.0, min(1.0, float(data.get("confidence", 0.0))))
        except (TypeError, ValueError):
            confidence = 0.0
        name = f"endpoint:{self.client.config.model}"
        return ConsistencyVerdict(name, emotion, predicted, confidence, reply.ok and predicted == emotion)
