"""Joining and cutting 16 kHz mono WAVs with pydub: dialogue previews and emotion-shift segments.

pydub reads and writes WAV itself (only other formats need ffmpeg), so it works on the studio's
normalised takes and on eSpeak NG speech with no external tool. Every result is the studio's
playback form: 16 kHz, mono, 16-bit PCM WAV. Pure: no Django.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

with warnings.catch_warnings():
    # pydub warns at import when no ffmpeg is on PATH (WAV, all we use, needs none) and that its
    # audioop leaves Python in 3.13 (pydub 0.25 ships a replacement for when it does).
    warnings.simplefilter("ignore", RuntimeWarning)
    warnings.simplefilter("ignore", DeprecationWarning)
    from pydub import AudioSegment

PREVIEW_RATE = 16_000
SAMPLE_WIDTH = 2  # bytes: 16-bit PCM
DEFAULT_GAP_SECONDS = 0.6  # between turns: long enough to hear a turn end, short enough to flow


class SegmentOutOfRange(ValueError):
    """A segment to cut does not lie inside the take (start < end, both within its length)."""


def _normalised(segment: AudioSegment) -> AudioSegment:
    return segment.set_channels(1).set_sample_width(SAMPLE_WIDTH).set_frame_rate(PREVIEW_RATE)


def _wav_bytes(segment: AudioSegment) -> bytes:
    buffer = io.BytesIO()
    segment.export(buffer, format="wav")
    return buffer.getvalue()


def read_wav(data: bytes) -> AudioSegment:
    """Return WAV bytes (any rate, channels, 16-bit) as a 16 kHz mono segment."""
    return _normalised(AudioSegment.from_wav(io.BytesIO(data)))


def samples_as_wav(samples: npt.NDArray[np.int16], sample_rate: int) -> bytes:
    """Return mono int16 samples (eSpeak NG gives 22.05 kHz) as a 16 kHz mono WAV."""
    segment = AudioSegment(
        np.asarray(samples, dtype="<i2").tobytes(),
        frame_rate=sample_rate,
        sample_width=SAMPLE_WIDTH,
        channels=1,
    )
    return _wav_bytes(_normalised(segment))


def wav_duration(data: bytes) -> float:
    """Return a WAV's length in seconds."""
    return float(AudioSegment.from_wav(io.BytesIO(data)).duration_seconds)


def join_turns(parts: Sequence[bytes], gap_seconds: float = DEFAULT_GAP_SECONDS) -> bytes:
    """Return the WAVs played one after another with `gap_seconds` of silence between them.

    A dialogue preview: user take, reply, user take, ... in conversation order.
    """
    if not parts:
        raise ValueError("nothing to join")
    if gap_seconds < 0:
        raise ValueError("the gap cannot be negative")
    gap = AudioSegment.silent(duration=round(gap_seconds * 1000), frame_rate=PREVIEW_RATE)
    joined = read_wav(parts[0])
    for part in parts[1:]:
        joined = joined + gap + read_wav(part)
    return _wav_bytes(_normalised(joined))


def cut_segments(data: bytes, segments: Sequence[tuple[float, float]]) -> list[bytes]:
    """Return each (start, end) stretch of a take, in seconds, as its own WAV (emotion-shift parts).

    Raise SegmentOutOfRange for a segment that is empty, reversed or runs past the take's end.
    """
    take = read_wav(data)
    length = take.duration_seconds
    cuts: list[bytes] = []
    for start, end in segments:
        if not 0 <= start < end or end > length + 1e-3:
            raise SegmentOutOfRange(
                f"the segment {start:.2f}-{end:.2f} s is not inside the {length:.2f} s take"
            )
        cuts.append(_wav_bytes(take[round(start * 1000) : round(end * 1000)]))
    return cuts
