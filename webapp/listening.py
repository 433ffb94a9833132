"""Listening proven to the server: what audio each person was sent, and whether they can have heard it.

`record_served` is called by the one view that serves stored audio (`webapp.storage.serve_signed_media`)
for the bytes it actually sent; `listening_refusal` is the one gate every place that needs a
person to have heard a recording asks (review verdicts, study ratings, rubric audio scores,
builder spot-checks). The rule itself is pure, in `webapp.lib.listening`.

Per person and stored file (its storage key): the audio links are signed for one viewer, so the
bytes sent on a link were sent to that person.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from datetime import datetime

from django.core.files.storage import default_storage
from django.utils import timezone

from webapp.lib.listening import bytes_covered, could_have_played_to_the_end, ranges_cover
from webapp.models import AudioFetch


def record_served(
    user_id: int | None, key: str, first: int, last: int, size: int, at: datetime | None = None
) -> None:
    """Remember that bytes `first`..`last` (inclusive) of the file at `key` were sent to the user."""
    if user_id is None or not key or last < first:
        return
    AudioFetch.objects.create(
        user_id=user_id, key=key, first_byte=first, last_byte=last, size=size, fetched_at=at or timezone.now()
    )


@dataclass(frozen=True)
class Fetched:
    """What the server sent one person of one file: since when, how much of how much."""

    first_at: datetime | None  # when the first byte was sent; None when nothing was
    bytes_sent: int  # distinct bytes of the file as it is now
    size: int
    whole: bool  # every byte of it was sent


def fetched(user_id: int, key: str) -> Fetched:
    """Return what the server sent the user of the file at `key` (its current size: a file stored
    again under the same key counts only the bytes sent of its new size)."""
    rows = list(
        AudioFetch.objects.filter(user_id=user_id, key=key).values_list(
            "first_byte", "last_byte", "size", "fetched_at"
        )
    )
    if not rows:
        return Fetched(None, 0, 0, whole=False)
    size = max(rows, key=lambda row: row[3])[2]
    spans = [(first, last) for first, last, row_size, _ in rows if row_size == size]
    started = min(at for *_, row_size, at in rows if row_size == size)
    return Fetched(started, bytes_covered(spans, size), size, whole=ranges_cover(spans, size))


def stored_audio_seconds(key: str) -> float:
    """Return the length of the stored WAV at `key`, 0.0 when it cannot be read as WAV."""
    try:
        with default_storage.open(key, "rb") as handle, wave.open(handle) as audio:
            rate = audio.getframerate()
            return audio.getnframes() / rate if rate else 0.0
    except (OSError, EOFError, wave.Error):
        return 0.0


def listening_refusal(
    user_id: int,
    key: str,
    what: str,
    *,
    seconds: float | None = None,
    now: datetime | None = None,
    max_speed: float = 1.0,
) -> str | None:
    """Return why the user cannot have heard the audio at `key` to the end yet, None when they can have.

    They can have once the server sent them every byte of the file and the audio's length
    (`seconds`, read from the stored file when not given; played at up to `max_speed`) has passed
    since the first byte went out. `what` names the audio in the message ("the take").
    """
    if not key:
        return None
    sent = fetched(user_id, key)
    if sent.first_at is None:
        return f"Play {what} first: the server has not sent you its audio."
    if not sent.whole:
        share = 100 * sent.bytes_sent // sent.size
        return f"Play {what} to the end: the server has sent you only {share}% of its audio."
    length = stored_audio_seconds(key) if seconds is None else seconds
    if not could_have_played_to_the_end(sent.first_at, length, now or timezone.now(), max_speed=max_speed):
        return f"Play {what} to the end: it lasts {length:.1f} s, longer than since you started it."
    return None
