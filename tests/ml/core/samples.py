"""Inputs shared by the EchoChat model tests: a formatted target and speech-like audio."""

from __future__ import annotations

import numpy as np

from ml.core.speech.inputs import SAMPLE_RATE
from webapp.lib.output_format import render_output, render_reasoning, render_strategy

PERCEPTION = "Low pitch, slow rate and a trembling voice: sad, strong intensity."
TARGET = render_output(
    perception=PERCEPTION,
    reasoning=render_reasoning(
        context="The user lost their job last week.",
        latent_need="Reassurance that they are not a failure.",
        core_demand="To be heard without judgement.",
        constraints="Avoid quick advice.",
    ),
    strategy=render_strategy(["Emotional validation", "Reassurance"], "comforting"),
    response="That sounds really hard. I am here with you.",
)
PROMPT = "Listen to the speaker, reason about how they feel, then respond with empathy."


def voiced_audio(seconds: float, pitch_hz: float = 180.0, seed: int = 0) -> np.ndarray:
    """Return a voiced, vowel-like signal: harmonics on a falling pitch, an envelope, light noise."""
    rng = np.random.default_rng(seed)
    time = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    pitch = pitch_hz * (1.0 - 0.2 * time / seconds)
    phase = 2 * np.pi * np.cumsum(pitch) / SAMPLE_RATE
    harmonics = sum(np.sin(k * phase) / k for k in range(1, 6))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * time / seconds))
    signal = 0.3 * envelope * harmonics + 0.01 * rng.standard_normal(time.shape)
    return signal.astype(np.float32)
