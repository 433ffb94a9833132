"""Check an uploaded take and turn it into the one format the rest of the pipeline reads.

Every take is stored twice: the original bytes, untouched, and a 16 kHz mono 16-bit PCM WAV that
playback, review and analysis use. An upload is refused with a reason the actor can act on.

What the upload is comes from its first bytes, never its name: a text file renamed to .wav is
refused before any decoder sees it, and ffmpeg is told which single demuxer to use, so it cannot
be talked into probing one of the hundreds of other formats it knows. Decoding runs the ffmpeg of
the imageio-ffmpeg wheel directly, with a timeout and an output capped just past the longest
acceptable take, so a header claiming hours of audio costs no more than a full-length take.
(pydub is not used here: its decoder asks ffprobe, which that wheel does not ship, and it can
neither time out nor cap what it reads.)
"""

from __future__ import annotations

import math
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import imageio_ffmpeg
import numpy as np
import numpy.typing as npt

from annotation.audio.acoustics import clipping_ratio, peak_dbfs
from annotation.audio.synthesis import to_wav_bytes

TARGET_SAMPLE_RATE = 16_000

# The container each first-bytes signature means, and the ffmpeg demuxer that reads it.
DEMUXERS = {
    "wav": "wav",
    "aiff": "aiff",
    "flac": "flac",
    "ogg": "ogg",
    "webm": "matroska",
    "matroska": "matroska",
    "mp4": "mov",
    "mp3": "mp3",
}
# File extension for storing the original of each container.
ORIGINAL_EXTENSIONS = {
    "wav": "wav",
    "aiff": "aiff",
    "flac": "flac",
    "ogg": "ogg",
    "webm": "webm",
    "matroska": "mka",
    "mp4": "m4a",
    "mp3": "mp3",
}
ACCEPTED_FORMATS_TEXT = "WAV, MP3, FLAC, OGG, WebM or M4A"

# A WAV whose header promises more audio than arrived by more than this was cut off in transit.
WAV_MISSING_TOLERANCE_SECONDS = 0.1
# RIFF writers that stream (they cannot seek back to fill in sizes) put one of these in the header.
_WAV_UNKNOWN_SIZES = {0, 0xFFFFFFFF}


@dataclass(frozen=True)
class UploadLimits:
    max_bytes: int = 50 * 1024 * 1024
    min_seconds: float = 0.5
    max_seconds: float = 60.0
    silence_peak_dbfs: float = -50.0  # a take whose loudest sample is below this is silent
    max_clipping_ratio: float = 0.01  # more than this share of samples at full scale is badly clipped
    decode_timeout_seconds: float = 30.0


class AudioRejected(Exception):
    """An upload that cannot become a take; `reason` is written for the actor who sent it."""

    def __init__(self, reason: str, code: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code  # empty, too_large, unreadable, truncated, too_short, too_long, silent, clipped


@dataclass(frozen=True, eq=False)
class NormalisedAudio:
    wav_bytes: bytes  # 16 kHz mono 16-bit PCM WAV
    samples: npt.NDArray[np.float32]  # the same audio as floats in [-1, 1]
    sample_rate: int
    duration_seconds: float
    original_format: str  # a key of DEMUXERS, detected from the content
    original_bytes: bytes

    @property
    def original_extension(self) -> str:
        """Return the file extension to store the original bytes under."""
        return ORIGINAL_EXTENSIONS[self.original_format]


def detect_container(data: bytes) -> str | None:
    """Return the audio container `data` starts with (a key of DEMUXERS), or None."""
    if data[8:12] == b"WAVE" and data[:4] in (b"RIFF", b"RF64"):
        return "wav"
    if data[:4] == b"FORM" and data[8:12] in (b"AIFF", b"AIFC"):
        return "aiff"
    if data[:4] == b"fLaC":
        return "flac"
    if data[:4] == b"OggS":
        return "ogg"
    if data[:4] == b"\x1a\x45\xdf\xa3":  # EBML, the envelope of Matroska and WebM
        return "webm" if b"webm" in data[:64] else "matroska"
    if data[4:8] == b"ftyp":
        return "mp4"
    if data[:3] == b"ID3":
        return "mp3"
    # A bare MPEG audio frame: 11 sync bits, then a layer other than "reserved".
    if len(data) >= 2 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0 and data[1] & 0x06:
        return "mp3"
    return None


def wav_missing_seconds(data: bytes) -> tuple[float, float] | None:
    """Return (promised, present) seconds when a WAV's data chunk is shorter than its header says.

    None when the header is consistent, uses a streaming size, or cannot be followed; the decoder
    then has the last word.
    """
    byte_rate = 0
    offset = 12
    while offset + 8 <= len(data):
        chunk_id, size = data[offset : offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        body = offset + 8
        if chunk_id == b"fmt " and body + 12 <= len(data):
            byte_rate = struct.unpack_from("<I", data, body + 8)[0]
        if chunk_id == b"data":
            present = len(data) - body
            if size in _WAV_UNKNOWN_SIZES or byte_rate == 0 or size <= present:
                return None
            promised_seconds, present_seconds = size / byte_rate, present / byte_rate
            if promised_seconds - present_seconds <= WAV_MISSING_TOLERANCE_SECONDS:
                return None
            return promised_seconds, present_seconds
        offset = body + size + (size & 1)  # chunks are padded to an even length
    return None


DEFAULT_LIMITS = UploadLimits()


def refuse_oversized(size: int, limits: UploadLimits = DEFAULT_LIMITS) -> None:
    """Raise AudioRejected when an upload of `size` bytes is over the limit.

    The API calls it with the declared size before reading the body; normalise_upload calls it on
    the bytes it was given.
    """
    if size > limits.max_bytes:
        raise AudioRejected(
            f"The file is too large ({_human_size(size)}); the limit is {_human_size(limits.max_bytes)}.",
            "too_large",
        )


def normalise_upload(data: bytes, filename: str, *, limits: UploadLimits = DEFAULT_LIMITS) -> NormalisedAudio:
    """Return the upload as 16 kHz mono audio, or raise AudioRejected saying what is wrong.

    `filename` only names the file in messages; the content decides what it is.
    """
    if not data:
        raise AudioRejected("The file is empty.", "empty")
    refuse_oversized(len(data), limits)
    container = detect_container(data)
    if container is None:
        raise AudioRejected(_unreadable(filename), "unreadable")
    if container == "wav" and (missing := wav_missing_seconds(data)) is not None:
        promised, present = missing
        raise AudioRejected(
            f"The file is cut off: its header promises {promised:.1f} s of audio but only "
            f"{present:.1f} s is there. Upload the complete file.",
            "truncated",
        )

    decoded = _decode(data, DEMUXERS[container], filename, limits)
    duration = len(decoded) / TARGET_SAMPLE_RATE
    if duration < limits.min_seconds:
        raise AudioRejected(
            # Rounded down, so 0.46 s reads 0.4 s and never looks like the 0.5 s it falls short of.
            f"The recording is too short ({math.floor(duration * 10) / 10:.1f} s); "
            f"record at least {limits.min_seconds:g} s.",
            "too_short",
        )
    if duration > limits.max_seconds:
        raise AudioRejected(
            f"The recording is too long (over {limits.max_seconds:g} s); keep it to "
            f"{limits.max_seconds:g} s or less.",
            "too_long",
        )
    peak = peak_dbfs(decoded)
    if peak < limits.silence_peak_dbfs:
        raise AudioRejected(
            f"The recording is silent (its loudest moment is {peak:.0f} dBFS). Check that the right "
            "microphone is selected and not muted, then record again.",
            "silent",
        )
    clipped = clipping_ratio(decoded)
    if clipped > limits.max_clipping_ratio:
        raise AudioRejected(
            f"The recording is badly clipped ({clipped:.1%} of it hits the maximum level). Lower the "
            "microphone gain or move further from it, then record again.",
            "clipped",
        )

    samples = np.clip(decoded, -1.0, 1.0).astype(np.float32)
    return NormalisedAudio(
        wav_bytes=to_wav_bytes(np.round(samples * 32767.0).astype(np.int16), TARGET_SAMPLE_RATE),
        samples=samples,
        sample_rate=TARGET_SAMPLE_RATE,
        duration_seconds=duration,
        original_format=container,
        original_bytes=data,
    )


def ffmpeg_reading(demuxer: str, source: Path) -> list[str]:
    """Return the start of an ffmpeg command reading the first audio stream of `source`: quiet, on
    one thread, with the demuxer its content was detected as (never one ffmpeg guesses)."""
    return [
        imageio_ffmpeg.get_ffmpeg_exe(),
        *("-nostdin", "-hide_banner", "-loglevel", "error", "-threads", "1"),
        *("-f", demuxer, "-i", str(source), "-map", "0:a:0"),
    ]


def _decode(data: bytes, demuxer: str, filename: str, limits: UploadLimits) -> npt.NDArray[np.float32]:
    """Return the first audio stream as 16 kHz mono float32, at most a little past max_seconds.

    Floats, not 16-bit integers, so samples a lossy codec pushed past full scale stay visible to
    the clipping check instead of being silently clamped.
    """
    cap_seconds = limits.max_seconds + 1.0
    # A real file rather than a pipe: MP4 keeps its index at the end, which ffmpeg must seek to.
    with tempfile.TemporaryDirectory(prefix="upload-") as folder:
        source = Path(folder) / "original"
        source.write_bytes(data)
        command = [
            *ffmpeg_reading(demuxer, source),
            # Every channel is kept (no -ac 1): ffmpeg's own downmix sums channels with gains that
            # can push a clean multi-channel recording past full scale; `_average_channels` cannot.
            "-ar",
            str(TARGET_SAMPLE_RATE),
            "-t",
            f"{cap_seconds:g}",
            "-f",
            "wav",
            "-c:a",
            "pcm_f32le",
            "-bitexact",
            "pipe:1",
        ]
        try:
            # stderr is dropped rather than collected: a damaged file can make ffmpeg log per packet.
            result = subprocess.run(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                timeout=limits.decode_timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise AudioRejected(
                f"“{filename}” took too long to read; it may be damaged. Export it again and upload "
                "the new file.",
                "unreadable",
            ) from error
    stream = _float_wav_stream(result.stdout) if result.returncode == 0 else None
    if stream is None:
        raise AudioRejected(_unreadable(filename), "unreadable")
    channels, payload = stream
    frames = len(payload) // (4 * channels)
    if frames == 0:
        raise AudioRejected(_unreadable(filename), "unreadable")
    # -t already bounds the output; the slice keeps that true even if a demuxer misreports time.
    frames = min(frames, round(cap_seconds * TARGET_SAMPLE_RATE))
    interleaved = np.frombuffer(payload[: frames * 4 * channels], dtype="<f4").reshape(frames, channels)
    return average_channels(interleaved)


def average_channels(frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Return the mean of the channels of (frames, channels) samples: a downmix that never adds
    gain, so identical channels keep their level and a clean recording cannot clip."""
    if frames.shape[1] == 1:
        return np.ascontiguousarray(frames[:, 0])
    return frames.mean(axis=1, dtype=np.float64).astype(np.float32)


def _float_wav_stream(data: bytes) -> tuple[int, bytes] | None:
    """Return (channels, sample bytes) of the float WAV ffmpeg wrote to a pipe, or None.

    Written to a pipe, the header's sizes are placeholders, so the data chunk is taken to run to
    the end of the stream.
    """
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    position, channels = 12, 0
    while position + 8 <= len(data):
        chunk_id, size = data[position : position + 4], struct.unpack_from("<I", data, position + 4)[0]
        body = position + 8
        if chunk_id == b"data":
            return (channels, data[body:]) if channels > 0 else None
        if chunk_id == b"fmt " and body + 4 <= len(data):
            channels = struct.unpack_from("<H", data, body + 2)[0]
        position = body + size + (size % 2)
    return None


def _unreadable(filename: str) -> str:
    return (
        f"This file is not audio we can read (“{filename}”). Upload a {ACCEPTED_FORMATS_TEXT} "
        "recording; renaming a file does not change what is inside it."
    )


def _human_size(size: int) -> str:
    if size < 1024 * 1024:
        return f"{max(1, round(size / 1024))} KB"
    return f"{size / (1024 * 1024):.1f} MB"
