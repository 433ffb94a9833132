"""Plain inputs shared by the EchoChat job tests (no Django): gold labels, audio, judge prompt reading."""

from __future__ import annotations

import numpy as np

from evaluation.judging.rubrics import SUBSCORE_RANGES
from ml.core.training_records import wav_bytes
from tests.support.fake_chat_server import RecordedRequest

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


def rubric_stage(request: RecordedRequest) -> str:
    """Return the rubric stage a judge prompt asks about (read from its answer template)."""
    assert isinstance(request.json, dict)
    system_prompt = request.json["messages"][0]["content"]
    for stage, ranges in SUBSCORE_RANGES.items():
        if '{"subscores": {' + ", ".join(f'"{name}": <int>' for name in ranges) + "}" in system_prompt:
            return stage
    raise AssertionError("not a rubric prompt")
