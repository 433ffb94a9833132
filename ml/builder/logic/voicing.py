"""How a user's emotion and intensity are voiced, and what arousal a listener should hear from them.

eSpeak NG carries emotion by prosody alone: rate and pitch move with arousal (fast and high for
anger, fear, surprise and joy; slow and low for sadness), further with intensity. The
emotion-consistency check (``consistency``) reads the same arousal scale back from the audio.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from webapp.lib.vocabulary import ANGRY, DISGUST, FEAR, HAPPY, HIGH, LOW, MEDIUM, NEUTRAL, SAD, SURPRISE

# Arousal of each emotion on [-1, 1] (circumplex model: sadness low, anger and fear high).
EMOTION_AROUSAL: dict[str, float] = {
    ANGRY: 0.8,
    FEAR: 0.6,
    SURPRISE: 0.7,
    HAPPY: 0.5,
    DISGUST: 0.1,
    NEUTRAL: 0.0,
    SAD: -0.7,
}
INTENSITY_SCALE: dict[str, float] = {LOW: 0.4, MEDIUM: 0.7, HIGH: 1.0}
NEUTRAL_RATE_WPM = 170
NEUTRAL_PITCH = 50
RATE_SPAN_WPM = 110  # rate at arousal +1 is NEUTRAL + SPAN, at -1 NEUTRAL - SPAN / 2
PITCH_SPAN = 40


def target_arousal(emotion: str, intensity: str) -> float:
    """Return the arousal in [-1, 1] a user with this emotion and intensity should sound."""
    return EMOTION_AROUSAL.get(emotion, 0.0) * INTENSITY_SCALE.get(intensity, INTENSITY_SCALE[MEDIUM])


def espeak_prosody(emotion: str, intensity: str) -> tuple[int, int]:
    """Return eSpeak NG (words per minute, pitch 0-100) voicing an emotion at an intensity."""
    arousal = target_arousal(emotion, intensity)
    span = RATE_SPAN_WPM if arousal >= 0 else RATE_SPAN_WPM / 2
    rate = round(NEUTRAL_RATE_WPM + arousal * span)
    pitch = round(NEUTRAL_PITCH + arousal * PITCH_SPAN)
    return max(80, min(450, rate)), max(0, min(100, pitch))


def pick_voice(rng: random.Random, voices: Sequence[str]) -> str:
    """Return one voice of the pool (a dialogue keeps it for every turn)."""
    return rng.choice(list(voices))
