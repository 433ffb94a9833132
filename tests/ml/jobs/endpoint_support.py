"""What an endpoint inference request carried: the takes' audio by PCM checksum (the endpoint job's
test and bench/endpoint_inference.py)."""

from __future__ import annotations

import base64
import hashlib
import io
import wave
from typing import Any

from annotation.recording.models import Item
from tests.support.fake_chat_server import RecordedRequest
from webapp.storage import read_media


def pcm_digest(wav: bytes) -> str:
    """Return the sha256 of a WAV's PCM frames (what the take holds, whatever its header)."""
    with wave.open(io.BytesIO(wav)) as reader:
        return hashlib.sha256(reader.readframes(reader.getnframes())).hexdigest()


def take_digests() -> dict[str, str]:
    """Return {PCM digest: item external id} of every recorded item's accepted take."""
    digests = {}
    for item in Item.objects.select_related("recording"):
        if item.recording is not None:
            digests[pcm_digest(read_media(item.recording.audio_key))] = item.external_id
    return digests


def sent_audio(message: dict[str, Any]) -> list[str]:
    """Return the PCM digests of a message's input_audio parts, in order."""
    content = message["content"]
    parts = content if isinstance(content, list) else []
    return [
        pcm_digest(base64.b64decode(part["input_audio"]["data"]))
        for part in parts
        if part.get("type") == "input_audio"
    ]


def take_of(request: RecordedRequest, digests: dict[str, str]) -> str:
    """Return the item whose take a request's last message carries."""
    body: Any = request.json
    return digests[sent_audio(body["messages"][-1])[0]]
