"""Audio files whose containers carry text naming the system that made them (for blindness tests).

Each file is real, playable audio with the name hidden where encoders and labs leave it: a RIFF
LIST/INFO chunk (and an odd extra chunk) in a WAV, ID3v2 and ID3v1 tags in an MP3, Vorbis comments
in an OGG, tags in a FLAC.
"""

from __future__ import annotations

import struct
import subprocess

import imageio_ffmpeg
import numpy as np

from annotation.audio.synthesis import to_wav_bytes

SYSTEM_NAME = "AcmeVoice-7B"
LAB_NAME = "Secret Lab of Speech"


def tone_wav(seconds: float = 1.0, rate: int = 24_000, frequency: float = 220.0) -> bytes:
    """Return a plain 16-bit mono WAV of a tone."""
    t = np.arange(round(seconds * rate)) / rate
    return to_wav_bytes(np.round(0.3 * np.sin(2 * np.pi * frequency * t) * 32767).astype(np.int16), rate)


def _chunk(name: bytes, body: bytes) -> bytes:
    return name + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")


def wav_with_riff_info(system: str = SYSTEM_NAME) -> bytes:
    """Return a WAV whose LIST/INFO chunk (and a custom chunk) name the system."""
    wav = tone_wav()
    info = b"INFO" + _chunk(b"INAM", f"{system} reply\0".encode()) + _chunk(b"ISFT", f"{system}\0".encode())
    info += _chunk(b"ICMT", f"{LAB_NAME}\0".encode())
    extra = _chunk(b"LIST", info) + _chunk(b"sysn", system.encode())
    return _riff(wav[12:], extra)


def _riff(chunks: bytes, extra: bytes) -> bytes:
    body = b"WAVE" + chunks + extra
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _ffmpeg(wav: bytes, *options: str) -> bytes:
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-f", "wav", "-i", "pipe:0"]
    return subprocess.run([*command, *options, "pipe:1"], input=wav, capture_output=True, check=True).stdout


def _tags(system: str) -> list[str]:
    return [
        "-metadata",
        f"artist={system}",
        "-metadata",
        f"title={system} output",
        "-metadata",
        f"comment={LAB_NAME}",
    ]


def mp3_with_id3(system: str = SYSTEM_NAME) -> bytes:
    """Return an MP3 with ID3v2 and ID3v1 tags naming the system."""
    return _ffmpeg(
        tone_wav(),
        *_tags(system),
        "-id3v2_version",
        "3",
        "-write_id3v1",
        "1",
        "-c:a",
        "libmp3lame",
        "-f",
        "mp3",
    )


def ogg_with_vorbis_comments(system: str = SYSTEM_NAME) -> bytes:
    """Return an OGG Vorbis file whose comments name the system."""
    return _ffmpeg(tone_wav(), *_tags(system), "-c:a", "libvorbis", "-f", "ogg")


def flac_with_tags(system: str = SYSTEM_NAME) -> bytes:
    """Return a FLAC file whose Vorbis comment block names the system."""
    return _ffmpeg(tone_wav(), *_tags(system), "-c:a", "flac", "-f", "flac")


def tagged_files(system: str = SYSTEM_NAME) -> dict[str, bytes]:
    """Return one tagged file per container, keyed by extension."""
    return {
        "wav": wav_with_riff_info(system),
        "mp3": mp3_with_id3(system),
        "ogg": ogg_with_vorbis_comments(system),
        "flac": flac_with_tags(system),
    }


def leaks(data: bytes, system: str = SYSTEM_NAME) -> list[str]:
    """Return the tag strings found in `data`, in ASCII/UTF-8 or UTF-16 (as ID3 may write them)."""
    found = []
    for text in (system, LAB_NAME):
        for encoded in (text.encode(), text.encode("utf-16-le"), text.encode("utf-16-be")):
            if encoded.lower() in data.lower():
                found.append(text)
                break
    return found
