"""The configured TTS backend (settings ECHOSTUDIO_TTS_*), as the pure ``annotation.audio.tts`` wants it."""

from __future__ import annotations

from functools import partial

from django.conf import settings

from annotation.audio.tts import TTS_BACKENDS, TtsSettings, speak_in_style
from ml.core.reward.features import StyleSynthesizer


def configured_tts() -> TtsSettings:
    """Return the TTS settings of this deployment (eSpeak NG unless configured otherwise)."""
    backend = next((name for name in TTS_BACKENDS if name == settings.TTS_BACKEND), None)
    if backend is None:
        raise ValueError(
            f"ECHOSTUDIO_TTS_BACKEND={settings.TTS_BACKEND!r} is not one of {', '.join(TTS_BACKENDS)}"
        )
    return TtsSettings(
        backend=backend,
        base_url=settings.TTS_BASE_URL,
        api_key=settings.TTS_API_KEY,
        model=settings.TTS_MODEL,
        voice=settings.TTS_VOICE,
        timeout_s=settings.TTS_TIMEOUT_SECONDS,
    )


def configured_synthesizer() -> StyleSynthesizer:
    """Return (text, style) -> (samples, rate) through the configured backend."""
    return partial(speak_in_style, settings=configured_tts())


def describe_tts(tts: TtsSettings) -> str:
    """Return the backend in words, for job logs."""
    if tts.backend == "openai":
        return f"the OpenAI-compatible speech server at {tts.base_url} (model {tts.model}, voice {tts.voice})"
    return "eSpeak NG"
