"""The configured TTS backend (settings ECHOSTUDIO_TTS_*), as the pure ``annotation.audio.tts`` wants
it, and EchoChat's responses voiced through it (inference outputs get audio for MOS studies and the
response-audio judge)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
from django.conf import settings

from annotation.audio.synthesis import to_wav_bytes
from annotation.audio.tts import DEFAULT_STYLE, TTS_BACKENDS, TtsSettings, speak_in_style
from ml.core.reward.features import StyleSynthesizer
from webapp.lib.output_format import ParsedOutput, parse_strategy_fields
from webapp.lib.stored_text import without_refused
from webapp.outbound import outbound_policy

SILENCE_RATE = 16_000


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
        outbound=outbound_policy(),
    )


def configured_synthesizer() -> StyleSynthesizer:
    """Return (text, style) -> (samples, rate) through the configured backend."""
    return partial(speak_in_style, settings=configured_tts())


def describe_tts(tts: TtsSettings) -> str:
    """Return the backend in words, for job logs."""
    if tts.backend == "openai":
        return f"the OpenAI-compatible speech server at {tts.base_url} (model {tts.model}, voice {tts.voice})"
    return "eSpeak NG"


class VoicedResponses:
    """Response audio made here, as an ``evaluation.outputs`` audio source: ``<item_id>.wav`` each.

    `failures` holds, by name, why a text could not be voiced: that row's error, the others' audio
    is kept."""

    def __init__(self, files: dict[str, bytes], failures: dict[str, str] | None = None) -> None:
        self._files = files
        self.failures = failures or {}

    def names(self) -> frozenset[str]:
        return frozenset(self._files)

    def read(self, name: str) -> bytes:
        return self._files[name]


def speech_style(parsed: ParsedOutput) -> str:
    """Return the speech style an output's strategy span declares (calm when it declares none)."""
    return parse_strategy_fields(parsed.span_text("strategy")).speech_style or DEFAULT_STYLE


def voice_texts(
    texts: Sequence[tuple[str, str, str]],
    synthesize: StyleSynthesizer,
    on_progress: Callable[[int], None] | None = None,
) -> VoicedResponses:
    """Speak each (name, text, style) as ``<name>.wav``; an empty text gets half a second of
    silence, which is what a listener would hear.

    A text is spoken without the characters no backend stores (a NUL, a lone surrogate: nothing a
    listener would hear). One text the synthesiser fails on is that row's failure (in
    `VoicedResponses.failures`, with the reason); the other texts are still voiced."""
    files: dict[str, bytes] = {}
    failures: dict[str, str] = {}
    for done, (name, text, style) in enumerate(texts, start=1):
        spoken = without_refused(text)
        if spoken:
            try:
                samples, rate = synthesize(spoken, style)
                pcm = np.asarray(samples)
                if not np.issubdtype(pcm.dtype, np.integer):
                    pcm = np.round(np.clip(pcm, -1.0, 1.0) * 32767.0)
                files[f"{name}.wav"] = to_wav_bytes(pcm.astype(np.int16), rate)
            except Exception as exc:  # one row's failure, whatever the backend raised: the others go on
                failures[name] = f"could not be voiced ({type(exc).__name__}: {exc})"[:500]
        else:
            files[f"{name}.wav"] = to_wav_bytes(np.zeros(SILENCE_RATE // 2, dtype=np.int16), SILENCE_RATE)
        if on_progress is not None:
            on_progress(done)
    return VoicedResponses(files, failures)


def voice_responses(
    responses: Sequence[tuple[str, ParsedOutput]],
    synthesize: StyleSynthesizer,
    on_progress: Callable[[int], None] | None = None,
) -> VoicedResponses:
    """Speak each (item id, parsed output)'s response span in the speech style its strategy span
    declares, as ``<item_id>.wav`` (`voice_texts`: silence for an output with no response)."""
    return voice_texts(
        [(item_id, parsed.span_text("response"), speech_style(parsed)) for item_id, parsed in responses],
        synthesize,
        on_progress,
    )
