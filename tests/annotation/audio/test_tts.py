"""The pluggable TTS: eSpeak NG styles, and the OpenAI speech path over real HTTP to a local server."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.audio.tts import (
    EspeakTts,
    OpenAiSpeechTts,
    TtsError,
    TtsSettings,
    build_tts,
    speak_in_style,
)
from tests.support.fake_speech_server import running_speech_server


def test_espeak_is_the_default_and_carries_the_style_in_its_prosody() -> None:
    assert isinstance(build_tts(), EspeakTts)
    excited, comforting = (
        EspeakTts().speak("I am so glad you told me.", style) for style in ("excited", "comforting")
    )
    assert excited.sample_rate == comforting.sample_rate
    # 300 words per minute against 130: the excited delivery is much shorter
    assert excited.duration_seconds < 0.7 * comforting.duration_seconds
    # an unknown style is spoken calm (eSpeak's output varies by a few samples between calls)
    unknown, calm = (EspeakTts().speak("Okay then.", style) for style in ("sarcastic", "calm"))
    assert unknown.duration_seconds == pytest.approx(calm.duration_seconds, rel=0.05)


def test_the_openai_backend_posts_the_text_and_style_and_decodes_the_wav() -> None:
    with running_speech_server(sample_rate=24_000, channels=2, seconds_per_word=0.25) as server:
        settings = TtsSettings(
            backend="openai", base_url=server.base_url, api_key="k-1", model="qwen3-tts", voice="v"
        )
        samples, rate = speak_in_style("That sounds hard, I am here.", "comforting", settings)
    assert rate == 24_000
    # six words at 0.25 s, two channels averaged into one
    assert samples.dtype == np.int16 and samples.ndim == 1 and len(samples) == 6 * 6000
    (request,) = server.requests
    assert request.path == "/v1/audio/speech"
    assert request.headers["Authorization"] == "Bearer k-1"
    assert request.json["model"] == "qwen3-tts" and request.json["voice"] == "v"
    assert request.json["input"] == "That sounds hard, I am here."
    assert request.json["response_format"] == "wav"
    assert "comforting" in str(request.json["instructions"])


def test_a_failing_or_garbled_server_is_a_clear_error() -> None:
    with running_speech_server(status=503) as server, pytest.raises(TtsError, match="HTTP 503"):
        OpenAiSpeechTts(TtsSettings(backend="openai", base_url=server.base_url)).speak("Hi.", "calm")
    with (
        running_speech_server(body=b"<html>proxy</html>") as server,
        pytest.raises(TtsError, match="not a WAV"),
    ):
        OpenAiSpeechTts(TtsSettings(backend="openai", base_url=server.base_url)).speak("Hi.", "calm")
    with pytest.raises(TtsError, match="no answer"):
        OpenAiSpeechTts(TtsSettings(backend="openai", base_url="http://127.0.0.1:9/v1", timeout_s=2)).speak(
            "Hi.", "calm"
        )


def test_settings_refuse_an_unknown_backend_or_a_server_without_url() -> None:
    with pytest.raises(ValueError, match="unknown TTS backend"):
        TtsSettings(backend="festival")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="base URL"):
        TtsSettings(backend="openai")
