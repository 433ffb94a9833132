"""Audio for the annotation tests: test signals, real encodings, and uploads that must be refused."""

from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass

import imageio_ffmpeg
import numpy as np
import numpy.typing as npt

from annotation.audio.synthesis import to_wav_bytes
from annotation.audio.upload import DEFAULT_LIMITS, UploadLimits

RATE = 16_000


def harmonic_tone(
    f0_hz: npt.ArrayLike, sample_rate: int = RATE, amplitude: float = 0.3
) -> npt.NDArray[np.float64]:
    """Return a voice-like tone following `f0_hz` (one value per sample): seven harmonics at 1/k."""
    phase = 2.0 * np.pi * np.cumsum(np.asarray(f0_hz, dtype=np.float64)) / sample_rate
    tone = sum(np.sin(k * phase) / k for k in range(1, 8))
    return amplitude * np.asarray(tone) / np.max(np.abs(tone))


def glide(*f0_points: float, seconds: float, sample_rate: int = RATE) -> npt.NDArray[np.float64]:
    """Return an f0 track moving linearly through `f0_points`, equally spaced in time."""
    anchors = np.linspace(0.0, seconds, len(f0_points))
    return np.interp(np.arange(round(seconds * sample_rate)) / sample_rate, anchors, f0_points)


def sine(
    frequency_hz: float, seconds: float, amplitude: float, sample_rate: int = RATE
) -> npt.NDArray[np.float64]:
    """Return a pure sine."""
    return amplitude * np.sin(
        2.0 * np.pi * frequency_hz * np.arange(round(seconds * sample_rate)) / sample_rate
    )


def wav_of(samples: npt.NDArray[np.float64], sample_rate: int = RATE) -> bytes:
    """Return float samples as a 16-bit WAV file (clipped at full scale, as a recorder would)."""
    return to_wav_bytes(np.round(np.clip(samples, -1.0, 1.0) * 32767).astype(np.int16), sample_rate)


def encode(wav: bytes, *output_options: str) -> bytes:
    """Return `wav` re-encoded by ffmpeg with `output_options` (codec, container...) to a pipe."""
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-f", "wav", "-i", "pipe:0"]
    return subprocess.run(
        [*command, *output_options, "pipe:1"], input=wav, capture_output=True, check=True
    ).stdout


def valid_encodings(wav: bytes) -> dict[str, bytes]:
    """Return `wav` in each format browsers and desktop tools produce, keyed by detected container."""
    return {
        "wav": wav,
        "mp3": encode(wav, "-c:a", "libmp3lame", "-b:a", "64k", "-f", "mp3"),
        "flac": encode(wav, "-c:a", "flac", "-f", "flac"),
        "ogg": encode(wav, "-c:a", "libvorbis", "-f", "ogg"),
        "webm": encode(wav, "-c:a", "libopus", "-ar", "48000", "-f", "webm"),
        # Fragmented, as a browser's MediaRecorder writes MP4 audio, so it can go through a pipe.
        "mp4": encode(wav, "-c:a", "aac", "-movflags", "frag_keyframe+empty_moov", "-f", "mp4"),
    }


def wav_with_declared_data_size(wav: bytes, declared: int) -> bytes:
    """Return `wav` (as written by the `wave` module: data chunk at byte 36) claiming `declared` bytes."""
    assert wav[36:40] == b"data"
    return wav[:40] + struct.pack("<I", declared) + wav[44:]


@dataclass(frozen=True)
class BadUpload:
    name: str
    filename: str
    data: bytes
    code: str  # AudioRejected.code expected
    says: str  # words the actor must read in the reason
    limits: UploadLimits = DEFAULT_LIMITS


def bad_uploads() -> list[BadUpload]:
    """Return uploads that must each be refused, with the reason they must be refused for."""
    speech_like = wav_of(harmonic_tone(np.full(RATE, 180.0)))
    text = b"Dear reviewer, this is a text file, not a recording.\n" * 40
    random_bytes = np.random.default_rng(7).bytes(20_000)
    assert random_bytes[0] != 0xFF, "seed must not start with an MPEG sync byte"
    one_second_8k = wav_of(harmonic_tone(np.full(8000, 180.0), sample_rate=8000), sample_rate=8000)
    return [
        BadUpload("zero bytes", "take.wav", b"", "empty", "The file is empty."),
        BadUpload("random bytes", "take.wav", random_bytes, "unreadable", "not audio we can read"),
        BadUpload("text named .wav", "take.wav", text, "unreadable", "not audio we can read"),
        BadUpload("text named .mp3", "take.mp3", text, "unreadable", "not audio we can read"),
        BadUpload(
            "Ogg signature then garbage", "take.ogg", b"OggS" + random_bytes, "unreadable", "not audio"
        ),
        BadUpload(
            "WAV cut inside its header", "take.wav", speech_like[:30], "unreadable", "not audio we can read"
        ),
        BadUpload(
            "WAV cut inside its audio",
            "take.wav",
            speech_like[: 44 + 2 * RATE * 3 // 10],
            "truncated",
            "promises 1.0 s of audio but only 0.3 s is there",
        ),
        BadUpload(
            "WAV header claiming 37 hours",
            "take.wav",
            wav_with_declared_data_size(wav_of(harmonic_tone(np.full(RATE // 2, 180.0))), 0xFFFF_FFF0),
            "truncated",
            "promises 134217.7 s of audio but only 0.5 s is there",
        ),
        BadUpload(
            "a fifth of a second",
            "take.wav",
            wav_of(harmonic_tone(np.full(RATE // 5, 180.0))),
            "too_short",
            "The recording is too short (0.2 s); record at least 0.5 s.",
        ),
        BadUpload(
            "61.5 s, at 8 kHz to stay small",
            "take.wav",
            wav_of(harmonic_tone(np.full(round(61.5 * 8000), 180.0), sample_rate=8000), sample_rate=8000),
            "too_long",
            "too long (over 60 s)",
        ),
        BadUpload("digital silence", "take.wav", wav_of(np.zeros(RATE)), "silent", "The recording is silent"),
        BadUpload(
            "a tone at -60 dBFS",
            "take.wav",
            wav_of(sine(440.0, 1.0, 10 ** (-60 / 20))),
            "silent",
            "loudest moment is -60 dBFS",
        ),
        BadUpload(
            "a tone driven four times past full scale",
            "take.wav",
            wav_of(4.0 * sine(220.0, 1.0, 1.0)),
            "clipped",
            "badly clipped",
        ),
        BadUpload(
            "over the size limit",
            "take.wav",
            one_second_8k,
            "too_large",
            "The file is too large (16 KB); the limit is 1 KB.",
            UploadLimits(max_bytes=1000),
        ),
    ]
