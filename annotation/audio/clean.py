"""Audio that someone judging blind may fetch, rebuilt from its decoded samples so only sound survives.

A container can carry text: RIFF INFO and other WAV chunks, ID3 tags in MP3, Vorbis comments in
OGG and FLAC, MP4 atoms, cue and marker names. A lab's outputs tagged with their system's name
would name it to evaluators. So the bytes stored for reviewers and evaluators are never the bytes
imported: ffmpeg decodes the first audio stream to 16-bit PCM (at the nearest common rate, mono or
stereo) with every metadata mapping off, and the WAV is then written here from those samples alone,
by the `wave` module (a fmt and a data chunk, nothing else), so even a tag the decoder carried
over has nowhere to go.
"""

from __future__ import annotations

import io
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

from annotation.audio.upload import DEMUXERS, AudioRejected, detect_container, ffmpeg_reading

# Long enough for any spoken reply; a header claiming more costs no more than this to decode.
DEFAULT_MAX_SECONDS = 600.0
DEFAULT_TIMEOUT_SECONDS = 60.0
# ffmpeg's aformat picks the closest of these to the source, so a 24 kHz TTS reply stays 24 kHz.
_SAMPLE_RATES = "8000|11025|16000|22050|24000|32000|44100|48000"


@dataclass(frozen=True, eq=False)
class CleanAudio:
    wav_bytes: bytes  # 16-bit PCM WAV holding only fmt and data chunks
    sample_rate: int
    channels: int
    duration_seconds: float


def clean_audio(
    data: bytes,
    name: str = "audio",
    *,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> CleanAudio:
    """Return `data` re-encoded from its decoded samples, or raise AudioRejected saying why not.

    `name` only names the file in messages; the content decides what it is.
    """
    container = detect_container(data)
    if container is None:
        raise AudioRejected(f"{name} is not a recognised audio file", "unreadable")
    with tempfile.TemporaryDirectory(prefix="clean-") as folder:
        source, decoded = Path(folder) / "source", Path(folder) / "decoded.wav"
        source.write_bytes(data)
        command = [
            *ffmpeg_reading(DEMUXERS[container], source),
            "-map_metadata",
            "-1",
            "-map_chapters",
            "-1",
            "-fflags",
            "+bitexact",
            "-flags:a",
            "+bitexact",
            "-af",
            f"aformat=sample_fmts=s16:channel_layouts=mono|stereo:sample_rates={_SAMPLE_RATES}",
            "-t",
            f"{max_seconds + 1.0:g}",
            "-c:a",
            "pcm_s16le",
            "-f",
            "wav",
            str(decoded),
        ]
        try:
            result = subprocess.run(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout_seconds
            )
        except subprocess.TimeoutExpired:
            raise AudioRejected(f"{name} took too long to decode; it may be damaged", "unreadable") from None
        if result.returncode != 0 or not decoded.exists():
            raise AudioRejected(f"{name} could not be decoded as {container.upper()} audio", "unreadable")
        try:
            with wave.open(str(decoded), "rb") as reader:
                channels, width, rate = reader.getnchannels(), reader.getsampwidth(), reader.getframerate()
                frames = reader.readframes(reader.getnframes())
        except (wave.Error, EOFError):
            raise AudioRejected(
                f"{name} could not be decoded as {container.upper()} audio", "unreadable"
            ) from None
    frame_count = len(frames) // (channels * width)
    if frame_count == 0:
        raise AudioRejected(f"{name} holds no audio", "empty")
    duration = frame_count / rate
    if duration > max_seconds:
        raise AudioRejected(f"{name} is longer than {max_seconds:g} s", "too_long")
    return CleanAudio(_wav_from_frames(frames, channels, width, rate), rate, channels, duration)


def is_clean_wav(data: bytes) -> bool:
    """Return True when `data` is a 16-bit PCM WAV of exactly a fmt and a data chunk, nothing after.

    What `clean_audio` writes; anything else (an INFO list, an ID3 chunk, trailing bytes) is not.
    """
    if len(data) < 44 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return False
    chunks, offset = [], 12
    while offset + 8 <= len(data):
        size = int.from_bytes(data[offset + 4 : offset + 8], "little")
        chunks.append((data[offset : offset + 4], offset + 8, size))
        offset += 8 + size + (size & 1)
    if offset != len(data) or [name for name, _, _ in chunks] != [b"fmt ", b"data"]:
        return False
    _, fmt_start, fmt_size = chunks[0]
    fmt = data[fmt_start : fmt_start + fmt_size]
    return fmt_size == 16 and fmt[:2] == b"\x01\x00" and fmt[14:16] == b"\x10\x00"


def _wav_from_frames(frames: bytes, channels: int, width: int, rate: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(frames)
    return buffer.getvalue()
