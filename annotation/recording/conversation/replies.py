"""The voice of a reference assistant reply: eSpeak NG speech, made once and kept under its media key.

The key is derived from the voice and the text (a hash: it names no person and no upload), so the
same reply is synthesised once however many actors, reviewers and previews play it, and a reply
whose text changes (a re-imported dialogue) simply gets a new key.
"""

from __future__ import annotations

import hashlib

from django.core.files.storage import default_storage

from annotation.audio.joining import samples_as_wav
from annotation.audio.tts import speak_in_style
from webapp.storage import save_media

# The assistant speaks calmly (tts.STYLE_PROSODY) in eSpeak NG's default voice, unlike any user voice.
REPLY_STYLE = "calm"
REPLY_KEY_VERSION = "espeak-calm-16k-v1"  # change to re-voice every reply


def reply_audio_key(text: str) -> str:
    """Return the media key of a reply's audio (whether or not it has been made yet)."""
    digest = hashlib.sha256(f"{REPLY_KEY_VERSION}\n{text}".encode()).hexdigest()[:40]
    return f"audio/reply/{digest}.wav"


def voiced_reply(text: str) -> str:
    """Return the media key of the reply spoken as 16 kHz WAV, synthesising it the first time; "" for no text.

    Two first viewers at once may both synthesise it; the storage keeps the first file under the
    key (the second is saved under another name and never read), so both hear the same audio.
    """
    if not text.strip():
        return ""
    key = reply_audio_key(text)
    if not default_storage.exists(key):
        samples, sample_rate = speak_in_style(text, REPLY_STYLE)
        save_media(key, samples_as_wav(samples, sample_rate))
    return key
