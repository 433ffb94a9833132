"""Mixing a background clip under a speech take (pure, pydub): how an environment delivery can be
made from an accepted neutral take. 16 kHz mono 16-bit WAV in and out, the speech's length."""

from __future__ import annotations

import io

from pydub import AudioSegment

SAMPLE_RATE = 16_000


def _read(data: bytes) -> AudioSegment:
    return AudioSegment.from_file(io.BytesIO(data), format="wav").set_channels(1).set_frame_rate(SAMPLE_RATE)


def mix_background(speech_wav: bytes, background_wav: bytes, gain_db: float) -> bytes:
    """Return the speech with the background (looped to its length) added at `gain_db` relative to
    the background clip's own level (negative: quieter)."""
    speech = _read(speech_wav).set_sample_width(2)
    background = _read(background_wav).set_sample_width(2)
    if len(background) == 0:
        raise ValueError("the background clip is empty")
    mixed = speech.overlay(background.apply_gain(gain_db), loop=True)
    out = io.BytesIO()
    mixed.export(out, format="wav")
    return out.getvalue()
