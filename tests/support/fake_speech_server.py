"""A real OpenAI-compatible text-to-speech server (POST /v1/audio/speech) on 127.0.0.1 for tests.

It answers every request with a WAV file: a tone of ``seconds_per_word`` per word of the input,
at ``sample_rate``, in ``channels`` channels, so a test can check that the client decoded the
very audio served. ``status`` makes it answer an error instead; ``body`` replaces the WAV (e.g.
with bytes that are not a WAV file). Requests are recorded (path, headers, parsed JSON body).

Usage::

    with running_speech_server() as server:
        speech = OpenAiSpeechTts(TtsSettings(backend="openai", base_url=server.base_url)).speak("Hi", "calm")
        assert server.requests[0].json["input"] == "Hi"
"""

from __future__ import annotations

import io
import json
import threading
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

SPEECH_PATH = "/v1/audio/speech"


@dataclass(frozen=True)
class SpeechRequest:
    path: str
    headers: dict[str, str]
    json: dict[str, object]


def tone_wav(seconds: float, sample_rate: int, channels: int = 1) -> bytes:
    """Return 16-bit PCM WAV bytes of a 220 Hz tone."""
    time = np.arange(int(seconds * sample_rate)) / sample_rate
    mono = np.round(0.3 * np.sin(2 * np.pi * 220.0 * time) * 32767).astype("<i2")
    frames = np.repeat(mono[:, None], channels, axis=1)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(frames.tobytes())
    return buffer.getvalue()


class FakeSpeechServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        sample_rate: int = 24_000,
        channels: int = 1,
        seconds_per_word: float = 0.2,
        status: int = 200,
        body: bytes | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.sample_rate = sample_rate
        self.channels = channels
        self.seconds_per_word = seconds_per_word
        self.status = status
        self.body = body
        self.requests: list[SpeechRequest] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: FakeSpeechServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        payload = json.loads(body) if body else {}
        with self.server.lock:
            self.server.requests.append(SpeechRequest(self.path, dict(self.headers.items()), payload))
        if self.path != SPEECH_PATH:
            self._send(404, b'{"error": {"message": "no route"}}', "application/json")
        elif self.server.status != 200:
            self._send(self.server.status, b'{"error": {"message": "fake failure"}}', "application/json")
        elif self.server.body is not None:
            self._send(200, self.server.body, "audio/wav")
        else:
            words = max(1, len(str(payload.get("input", "")).split()))
            wav = tone_wav(
                words * self.server.seconds_per_word, self.server.sample_rate, self.server.channels
            )
            self._send(200, wav, "audio/wav")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def running_speech_server(**options: object) -> Iterator[FakeSpeechServer]:
    """Run a FakeSpeechServer on a free local port for the duration of the block."""
    server = FakeSpeechServer(**options)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
