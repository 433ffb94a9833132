"""Joining dialogue turns and cutting emotion-shift segments, on real eSpeak NG speech."""

from __future__ import annotations

import io
import wave

import pytest

from annotation.audio.joining import (
    PREVIEW_RATE,
    SegmentOutOfRange,
    cut_segments,
    join_turns,
    samples_as_wav,
    wav_duration,
)
from annotation.audio.synthesis import synthesize, to_wav_bytes


def format_of(data: bytes) -> tuple[int, int, int, float]:
    with wave.open(io.BytesIO(data)) as reader:
        return (
            reader.getframerate(),
            reader.getnchannels(),
            reader.getsampwidth(),
            reader.getnframes() / reader.getframerate(),
        )


@pytest.fixture(scope="module")
def turns() -> list[bytes]:
    """Three spoken turns at eSpeak NG's own 22.05 kHz: a user line, a reply, a user line."""
    lines = ["I lost my job today.", "I am sorry, that sounds hard.", "Actually, I feel a bit relieved."]
    return [to_wav_bytes(speech.samples, speech.sample_rate) for speech in map(synthesize, lines)]


def test_speech_becomes_16_khz_mono_of_the_same_length() -> None:
    speech = synthesize("Tell me more about it.")

    rate, channels, width, seconds = format_of(samples_as_wav(speech.samples, speech.sample_rate))

    assert (rate, channels, width) == (PREVIEW_RATE, 1, 2)
    assert seconds == pytest.approx(speech.duration_seconds, abs=0.01)


def test_joined_turns_last_as_long_as_the_turns_and_the_gaps(turns: list[bytes]) -> None:
    lengths = [wav_duration(part) for part in turns]

    joined = join_turns(turns, gap_seconds=0.5)

    rate, channels, width, seconds = format_of(joined)
    assert (rate, channels, width) == (PREVIEW_RATE, 1, 2)
    assert seconds == pytest.approx(sum(lengths) + 2 * 0.5, abs=0.01)


def test_the_gap_between_turns_is_silent(turns: list[bytes]) -> None:
    import numpy as np

    first = wav_duration(turns[0])
    joined = join_turns(turns[:2], gap_seconds=0.4)
    with wave.open(io.BytesIO(joined)) as reader:
        samples = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")

    gap = samples[round((first + 0.05) * PREVIEW_RATE) : round((first + 0.35) * PREVIEW_RATE)]
    assert np.max(np.abs(gap)) == 0
    assert np.max(np.abs(samples[: round(first * PREVIEW_RATE)])) > 3000


def test_nothing_to_join_is_refused() -> None:
    with pytest.raises(ValueError, match="nothing to join"):
        join_turns([])


def test_segments_are_cut_at_their_seconds(turns: list[bytes]) -> None:
    take = join_turns(turns, gap_seconds=0.5)

    cuts = cut_segments(take, [(0.0, 0.8), (1.25, 2.0)])

    assert [format_of(cut)[0] for cut in cuts] == [PREVIEW_RATE, PREVIEW_RATE]
    assert [format_of(cut)[3] for cut in cuts] == pytest.approx([0.8, 0.75], abs=0.002)


@pytest.mark.parametrize("segment", [(0.5, 0.5), (0.9, 0.2), (-0.1, 0.4), (0.0, 99.0)])
def test_a_segment_outside_the_take_is_refused(turns: list[bytes], segment: tuple[float, float]) -> None:
    with pytest.raises(SegmentOutOfRange, match="not inside"):
        cut_segments(turns[0], [segment])
