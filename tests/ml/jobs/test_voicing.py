"""Voicing EchoChat's responses through the backend the settings choose (no database)."""

from __future__ import annotations

import io
import wave
from typing import Any

import pytest

from ml.jobs.voicing import configured_synthesizer, configured_tts, describe_tts, voice_responses
from tests.support.fake_speech_server import running_speech_server
from webapp.lib.output_format import parse_output, render_output, render_strategy


def wav_info(data: bytes) -> tuple[int, int]:
    with wave.open(io.BytesIO(data), "rb") as wav:
        return wav.getframerate(), wav.getnframes()


def test_responses_are_voiced_by_the_openai_server_the_settings_name(settings: Any) -> None:
    with running_speech_server(sample_rate=24_000, seconds_per_word=0.1) as server:
        settings.TTS_BACKEND, settings.TTS_BASE_URL, settings.TTS_VOICE = "openai", server.base_url, "warm"
        spoken = parse_output(
            render_output(
                "Sad.",
                "Context: loss.",
                render_strategy(["Reassurance"], "comforting"),
                "I am here with you.",
            )
        )
        silent = parse_output("<think><perception>Sad.</perception></think>")
        voiced = voice_responses([("EE-1", spoken), ("EE-2", silent)], configured_synthesizer())

    assert voiced.names() == {"EE-1.wav", "EE-2.wav"}
    # five words at 0.1 s from the server; the empty response is half a second of silence, not a request
    assert wav_info(voiced.read("EE-1.wav")) == (24_000, 5 * 2400)
    assert wav_info(voiced.read("EE-2.wav")) == (16_000, 8000)
    (request,) = server.requests
    assert request.json["input"] == "I am here with you." and request.json["voice"] == "warm"
    assert "comforting" in str(request.json["instructions"])
    assert describe_tts(configured_tts()).startswith("the OpenAI-compatible speech server")


def test_espeak_is_the_default_and_a_bad_backend_name_is_refused(settings: Any) -> None:
    settings.TTS_BACKEND = "espeak"
    assert describe_tts(configured_tts()) == "eSpeak NG"
    settings.TTS_BACKEND = "festival"
    with pytest.raises(ValueError, match="ECHOSTUDIO_TTS_BACKEND"):
        configured_tts()
