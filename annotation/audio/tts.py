"""Speaking a response in a speech style: eSpeak NG (default, offline) or an OpenAI-compatible TTS server.

Used wherever the app needs a response's voice: the reward model's training ladder (responses
re-voiced in a mismatched style, appendix D.1), the reward model hearing RL rollouts, and
EchoChat's inference outputs, which get audio so systems can enter MOS studies and the
response-audio judge.

- ``espeak``: ``annotation.audio.synthesis`` with a rate and pitch per style (``STYLE_PROSODY``).
  Robotic, but offline and deterministic; style is carried by prosody alone.
- ``openai``: POST ``{base_url}/audio/speech`` as OpenAI's API defines it (a Qwen3-TTS or similar
  server behind an OpenAI-compatible front), asking for WAV, with the style as the
  ``instructions`` field that instruction-following TTS models read.

Pure: no Django. ``ml.jobs`` builds ``TtsSettings`` from the ECHOSTUDIO_TTS_* settings.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

import numpy as np

from annotation.audio.synthesis import SynthesizedSpeech, synthesize
from webapp.lib.outbound import OutboundPolicy

TtsBackendName = Literal["espeak", "openai"]
TTS_BACKENDS: tuple[TtsBackendName, ...] = get_args(TtsBackendName)

# eSpeak NG (words per minute, pitch 0-100) per speech style of the strategy span.
STYLE_PROSODY: dict[str, tuple[int, int]] = {
    "comforting": (130, 20),
    "calm": (170, 45),
    "excited": (300, 90),
}
DEFAULT_STYLE = "calm"
# What an instruction-following TTS is told for each style.
STYLE_INSTRUCTIONS: dict[str, str] = {
    "comforting": "Speak softly and slowly, in a warm, comforting tone.",
    "calm": "Speak in a calm, even, reassuring tone.",
    "excited": "Speak quickly and brightly, in an excited, energetic tone.",
}


class TtsError(RuntimeError):
    """The TTS backend gave no usable audio (server error, not a WAV, unreachable)."""


@dataclass(frozen=True)
class TtsSettings:
    backend: TtsBackendName = "espeak"
    base_url: str = ""  # OpenAI-style, e.g. "http://tts-box:8000/v1"
    api_key: str = ""
    model: str = "tts-1"
    voice: str = "alloy"
    timeout_s: float = 120.0
    # Every request checked and pinned (webapp.lib.outbound); None only for the command line.
    outbound: OutboundPolicy | None = None

    def __post_init__(self) -> None:
        if self.backend not in TTS_BACKENDS:
            raise ValueError(
                f"unknown TTS backend {self.backend!r}: expected one of {', '.join(TTS_BACKENDS)}"
            )
        if self.backend == "openai" and not self.base_url.strip():
            raise ValueError("the openai TTS backend needs a base URL (ECHOSTUDIO_TTS_BASE_URL)")


class Tts(Protocol):
    def speak(self, text: str, style: str) -> SynthesizedSpeech: ...


def _style(style: str) -> str:
    cleaned = style.strip().lower()
    return cleaned if cleaned in STYLE_PROSODY else DEFAULT_STYLE


class EspeakTts:
    """eSpeak NG with the prosody of a style (calm for a style it does not know)."""

    def speak(self, text: str, style: str) -> SynthesizedSpeech:
        rate, pitch = STYLE_PROSODY[_style(style)]
        return synthesize(text, rate_wpm=rate, pitch=pitch)


class OpenAiSpeechTts:
    """An OpenAI-compatible ``/audio/speech`` endpoint, asked for WAV."""

    def __init__(self, settings: TtsSettings) -> None:
        self.settings = settings

    def speak(self, text: str, style: str) -> SynthesizedSpeech:
        headers = {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else {}
        payload = {
            "model": self.settings.model,
            "input": text,
            "voice": self.settings.voice,
            "response_format": "wav",
            "instructions": STYLE_INSTRUCTIONS[_style(style)],
        }
        url = self.settings.base_url.rstrip("/") + "/audio/speech"
        # Loaded on the first call: the web process imports this module and never speaks.
        import httpx

        from webapp.lib.pinned_http import http_client

        try:
            with http_client(self.settings.outbound, timeout=self.settings.timeout_s) as http:
                response = http.post(url, json=payload, headers=headers)
        except httpx.HTTPError as exc:
            raise TtsError(f"the TTS server at {self.settings.base_url} gave no answer: {exc}") from exc
        if response.status_code != 200:
            raise TtsError(f"the TTS server answered HTTP {response.status_code}: {response.text[:200]}")
        return decode_wav(response.content)


def decode_wav(data: bytes) -> SynthesizedSpeech:
    """Return 16-bit PCM WAV bytes as mono samples (channels averaged); raise TtsError otherwise."""
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as exc:
        raise TtsError(f"the TTS answer is not a WAV file: {exc}") from exc
    if width != 2:
        raise TtsError(f"the TTS answer is {8 * width}-bit WAV; 16-bit PCM is expected")
    samples = np.frombuffer(frames, dtype="<i2").reshape(-1, channels)
    mono = samples.mean(axis=1).round().astype(np.int16) if channels > 1 else samples[:, 0].astype(np.int16)
    return SynthesizedSpeech(samples=mono, sample_rate=rate)


def build_tts(settings: TtsSettings | None = None) -> Tts:
    """Return the configured backend (eSpeak NG without settings)."""
    chosen = settings or TtsSettings()
    return OpenAiSpeechTts(chosen) if chosen.backend == "openai" else EspeakTts()


def speak_in_style(text: str, style: str, settings: TtsSettings | None = None) -> tuple[np.ndarray, int]:
    """Return ``text`` spoken in a speech style as (int16 samples, sample rate)."""
    speech = build_tts(settings).speak(text, style)
    return speech.samples, speech.sample_rate
