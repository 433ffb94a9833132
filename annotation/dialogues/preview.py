"""A dialogue's preview: its recorded turns and the reference replies joined into one WAV.

Built on demand from the take standing for each turn (as a reviewer would hear it) and the voiced
reply after it, up to the first turn without a take. The WAV is stored under a key derived from
what went into it, so a preview is built once and a turn's new take makes a new one.
"""

from __future__ import annotations

import hashlib

from django.core.files.storage import default_storage

from annotation.audio.joining import join_turns
from annotation.recording.conversation.history import take_to_play
from annotation.recording.conversation.replies import voiced_reply
from annotation.recording.models import Dialogue
from webapp.storage import read_media, save_media


def preview_parts(dialogue: Dialogue) -> list[str]:
    """Return the media keys to play in order: turn 1's take, its reply, turn 2's take, ...

    Ends before the first turn with no take standing (the conversation so far)."""
    parts: list[str] = []
    for item in dialogue.turns.order_by("turn"):
        take = take_to_play(item)
        if take is None:
            break
        parts.append(take.audio_key)
        if reply := voiced_reply(item.reference_reply):
            parts.append(reply)
    return parts


def preview_key(parts: list[str]) -> str:
    """Return the key the preview of these parts is stored under ("" for nothing to preview)."""
    if not parts:
        return ""
    return f"audio/preview/{hashlib.sha256(chr(10).join(parts).encode()).hexdigest()[:40]}.wav"


def existing_preview(dialogue: Dialogue) -> str:
    """Return the key of the dialogue's current preview when it has been built, else ""."""
    key = preview_key(preview_parts(dialogue))
    return key if key and default_storage.exists(key) else ""


def build_preview(dialogue: Dialogue) -> str:
    """Return the key of the dialogue's current preview, joining it first if needed ("" when no
    turn has a take yet)."""
    parts = preview_parts(dialogue)
    key = preview_key(parts)
    if key and not default_storage.exists(key):
        save_media(key, join_turns([read_media(part) for part in parts]))
    return key
