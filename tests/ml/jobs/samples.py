"""Plain inputs shared by the EchoChat job tests (no Django): gold labels and audio."""

from __future__ import annotations

import numpy as np

from ml.core.training_records import wav_bytes

GOLD_PERCEPTION = {
    "polarity": "negative",
    "emotion": "sad",
    "emotion_variant": "loneliness",
    "intensity": "medium",
    "pitch": "low",
    "prosody_caption": "soft and slow",
    "situation": "eats alone",
    "modality_conflict": False,
}
GOLD_TOM = {
    "context": "alone again",
    "latent_need": "company",
    "core_demand": "be heard",
    "recommended_strategies": ["emotional-validation"],
    "not_recommended_strategies": ["information"],
    "constraints": ["lecturing"],
}
REFERENCE_RESPONSE = "That sounds lonely. I am here."


def voiced_wav(seconds: float = 0.6, pitch_hz: float = 160.0) -> bytes:
    """Return a short vowel-like WAV: harmonics under an envelope."""
    time = np.arange(int(seconds * 16_000)) / 16_000
    phase = 2 * np.pi * pitch_hz * time
    signal = 0.3 * np.sin(np.pi * time / seconds) * sum(np.sin(k * phase) / k for k in range(1, 4))
    return wav_bytes(signal.astype(np.float32), 16_000)
