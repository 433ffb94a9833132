import io
import wave

import numpy as np
import pytest

from annotation.audio.acoustics import rms_dbfs
from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.audio.upload import (
    AudioRejected,
    UploadLimits,
    detect_container,
    normalise_upload,
)
from tests.annotation.audio.audio_corpus import BadUpload, bad_uploads, encode, valid_encodings

BAD_UPLOADS = bad_uploads()


@pytest.fixture(scope="module")
def speech_wav() -> bytes:
    speech = synthesize("Thank you for waiting, I know today has been hard for you.")
    return to_wav_bytes(speech.samples, speech.sample_rate)


@pytest.fixture(scope="module")
def encodings(speech_wav: bytes) -> dict[str, bytes]:
    return valid_encodings(speech_wav)


@pytest.mark.parametrize("upload", BAD_UPLOADS, ids=[upload.name for upload in BAD_UPLOADS])
def test_bad_upload_is_refused_with_a_reason_the_actor_understands(upload: BadUpload) -> None:
    with pytest.raises(AudioRejected) as refused:
        normalise_upload(upload.data, upload.filename, limits=upload.limits)

    assert refused.value.code == upload.code
    assert upload.says in refused.value.reason


@pytest.mark.parametrize("container", ["wav", "mp3", "flac", "ogg", "webm", "mp4"])
def test_each_format_becomes_16_khz_mono_16_bit_wav(container: str, encodings: dict[str, bytes]) -> None:
    original = encodings[container]

    audio = normalise_upload(original, f"take.{container}")

    with wave.open(io.BytesIO(audio.wav_bytes)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16_000, 1, 2)
        assert wav.getnframes() == len(audio.samples)
    assert audio.sample_rate == 16_000
    assert audio.samples.dtype == np.float32
    assert audio.duration_seconds == len(audio.samples) / 16_000
    assert audio.original_format == container
    assert audio.original_bytes is original


@pytest.mark.parametrize("container", ["wav", "mp3", "flac", "ogg", "webm", "mp4"])
def test_decoded_speech_keeps_its_length_and_level(
    container: str, encodings: dict[str, bytes], speech_wav: bytes
) -> None:
    reference = normalise_upload(speech_wav, "take.wav")

    audio = normalise_upload(encodings[container], "take")

    # Lossy encoders add up to a few frames of priming and padding, never more than 0.1 s.
    assert audio.duration_seconds == pytest.approx(reference.duration_seconds, abs=0.1)
    assert rms_dbfs(audio.samples) == pytest.approx(rms_dbfs(reference.samples), abs=1.0)


def test_stereo_44_1_khz_is_mixed_down_and_resampled(speech_wav: bytes) -> None:
    stereo = encode(speech_wav, "-ac", "2", "-ar", "44100", "-f", "wav")

    audio = normalise_upload(stereo, "stereo.wav")

    assert audio.sample_rate == 16_000
    assert audio.samples.ndim == 1


def test_content_decides_the_format_not_the_name(encodings: dict[str, bytes]) -> None:
    audio = normalise_upload(encodings["mp3"], "take.wav")

    assert audio.original_format == "mp3"
    assert audio.original_extension == "mp3"


def test_webm_and_mp4_originals_are_stored_under_browser_extensions(encodings: dict[str, bytes]) -> None:
    assert normalise_upload(encodings["webm"], "a").original_extension == "webm"
    assert normalise_upload(encodings["mp4"], "a").original_extension == "m4a"


def test_decoding_that_overruns_its_time_is_refused(speech_wav: bytes) -> None:
    with pytest.raises(AudioRejected) as refused:
        normalise_upload(speech_wav, "take.wav", limits=UploadLimits(decode_timeout_seconds=0.001))

    assert refused.value.code == "unreadable"
    assert "took too long to read" in refused.value.reason


def test_detect_container_reads_signatures() -> None:
    assert detect_container(b"RIFF\x00\x00\x00\x00WAVEfmt ") == "wav"
    assert detect_container(b"ID3\x04\x00") == "mp3"
    assert detect_container(b"\xff\xfb\x90\x00") == "mp3"
    assert detect_container(b"\xff\xf1\x50\x80") is None  # ADTS AAC: layer bits 00, not MPEG audio
    assert detect_container(b"\x00\x00\x00\x20ftypM4A ") == "mp4"
    assert detect_container(b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm") == "webm"
    assert detect_container(b"\x1a\x45\xdf\xa3\x9f\x42\x82\x88matroska") == "matroska"
    assert detect_container(b"<html>") is None


def _multichannel_wav(mono: np.ndarray, channels: int, sample_rate: int) -> bytes:
    """Return 16-bit PCM WAV bytes with the same signal on every one of `channels` channels."""
    frames = np.repeat(np.round(mono * 32767).astype("<i2")[:, None], channels, axis=1)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(frames.tobytes())
    return buffer.getvalue()


def test_eight_identical_channels_at_96_khz_near_full_scale_are_accepted_at_their_own_level() -> None:
    # A tone swept through speech-like pitches, peaking at -4 dBFS on all eight channels.
    sample_rate = 96_000
    t = np.arange(int(2.0 * sample_rate)) / sample_rate
    peak = 10 ** (-4 / 20)
    mono = peak * np.sin(2 * np.pi * (180 + 60 * np.sin(2 * np.pi * 1.5 * t)) * t)
    upload = _multichannel_wav(mono, 8, sample_rate)

    audio = normalise_upload(upload, "eight-channels.wav")

    assert audio.samples.ndim == 1
    assert 20 * np.log10(np.max(np.abs(audio.samples))) == pytest.approx(-4.0, abs=0.5)
    assert rms_dbfs(audio.samples) == pytest.approx(rms_dbfs(mono.astype(np.float32)), abs=0.5)


def test_a_downmix_of_unequal_channels_never_exceeds_the_loudest_channel() -> None:
    from annotation.audio.upload import average_channels

    frames = np.array([[0.9, 0.9, -0.9], [0.5, -0.5, 0.0], [1.0, 1.0, 1.0]], dtype=np.float32)

    mono = average_channels(frames)

    assert np.all(np.abs(mono) <= np.max(np.abs(frames), axis=1))
    assert mono.tolist() == pytest.approx([0.3, 0.0, 1.0])
