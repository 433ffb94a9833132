"""clean_audio: audio rebuilt from decoded samples keeps the sound and drops every tag."""

from __future__ import annotations

import io
import struct
import wave

import numpy as np
import pytest

from annotation.audio.clean import clean_audio
from annotation.audio.upload import AudioRejected
from tests.support.tagged_audio import SYSTEM_NAME, leaks, tagged_files, tone_wav


def _chunk_ids(wav: bytes) -> list[bytes]:
    ids, offset = [], 12
    while offset + 8 <= len(wav):
        chunk_id, size = wav[offset : offset + 4], struct.unpack_from("<I", wav, offset + 4)[0]
        ids.append(chunk_id)
        offset += 8 + size + (size & 1)
    return ids


@pytest.mark.parametrize("container", ["wav", "mp3", "ogg", "flac"])
def test_tags_naming_the_system_do_not_survive(container: str) -> None:
    original = tagged_files()[container]
    assert SYSTEM_NAME in leaks(original), "the test file must carry the tag it is about"

    clean = clean_audio(original)

    assert leaks(clean.wav_bytes) == []
    assert _chunk_ids(clean.wav_bytes) == [b"fmt ", b"data"]
    assert (clean.sample_rate, clean.channels) == (24_000, 1)
    assert clean.duration_seconds == pytest.approx(1.0, abs=0.1)


def test_the_sound_itself_is_kept() -> None:
    original = tone_wav(seconds=0.5, rate=24_000)
    clean = clean_audio(original)
    with wave.open(io.BytesIO(original)) as before, wave.open(io.BytesIO(clean.wav_bytes)) as after:
        a = np.frombuffer(before.readframes(before.getnframes()), "<i2")
        b = np.frombuffer(after.readframes(after.getnframes()), "<i2")
    assert np.array_equal(a, b)


def test_what_is_not_audio_or_too_long_is_refused() -> None:
    with pytest.raises(AudioRejected, match="not a recognised audio file"):
        clean_audio(b"just text, with AcmeVoice-7B in it")
    with pytest.raises(AudioRejected, match="could not be decoded"):
        clean_audio(b"OggS" + bytes(range(256)) * 20)
    with pytest.raises(AudioRejected, match=r"longer than 0\.5 s"):
        clean_audio(tone_wav(seconds=1.0), max_seconds=0.5)


def test_only_clean_rebuilds_count_as_clean() -> None:
    from annotation.audio.clean import is_clean_wav

    assert is_clean_wav(clean_audio(tagged_files()["wav"]).wav_bytes)
    assert is_clean_wav(tone_wav())  # the wave module writes only fmt and data
    assert not is_clean_wav(tagged_files()["wav"])
    assert not is_clean_wav(tone_wav() + b"ID3 trailing tag AcmeVoice-7B")
    assert not is_clean_wav(tagged_files()["mp3"])
