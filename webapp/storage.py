"""Where media live and how browsers reach them.

Files are stored under random keys (see `new_media_key`) so a key says nothing about who made it.
Browsers get audio only through `audio_url`, the one home of audio links: a URL signed for one
viewer that expires after AUDIO_URL_TTL_SECONDS, served by `serve_signed_media` from local disk or
streamed from the bucket (no presigned S3 URL ever reaches a browser: anyone holding one could
open it). A link copied to another account or an anonymous browser is refused. No link contains a
user name, an original file name or any metadata, and no response names a file.
"""

from __future__ import annotations

import mimetypes
import re
import uuid
from collections.abc import Iterator
from typing import IO

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.views import redirect_to_login
from django.core import signing
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from webapp.listening import record_served

_SIGNING_SALT = "echostudio.media"
_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
_CHUNK = 64 * 1024
# An open-ended range ("bytes=N-", what a media element asks for) is answered with at most this
# many bytes: the element asks again as it plays, so a long take streams in pieces and playback
# starts after the first piece, not after the whole file (issue 46).
OPEN_RANGE_LIMIT = 512 * 1024


def new_media_key(kind: str, extension: str) -> str:
    """Return a fresh random storage key such as 'audio/take/3f2a….wav'."""
    extension = extension.lower().lstrip(".") or "bin"
    if not re.fullmatch(r"[a-z0-9]{1,8}", extension) or not re.fullmatch(r"[a-z_-]{1,32}", kind):
        raise ValueError("kind and extension must be short plain words")
    return f"audio/{kind}/{uuid.uuid4().hex}.{extension}"


def save_media(key: str, data: bytes) -> str:
    """Store bytes under the key and return the key actually used."""
    return default_storage.save(key, ContentFile(data))


def read_media(key: str) -> bytes:
    """Return the stored bytes of a key."""
    with default_storage.open(key, "rb") as handle:
        return bytes(handle.read())


def read_media_range(key: str, start: int, end: int) -> bytes:
    """Return bytes `start`..`end` (inclusive) of a stored file, reading only those: on S3 by a
    ranged GET (the storage's own file object would download the whole object first), on disk by
    a seek."""
    bucket = getattr(default_storage, "bucket", None)
    if bucket is not None:
        name = default_storage._normalize_name(key)  # type: ignore[attr-defined]  # S3Storage's own key rule
        return bytes(bucket.Object(name).get(Range=f"bytes={start}-{end}")["Body"].read())
    with default_storage.open(key, "rb") as handle:
        handle.seek(start)
        return bytes(handle.read(end - start + 1))


def delete_media(*keys: str) -> None:
    """Delete stored files, ignoring keys that are already gone."""
    for key in keys:
        if key and default_storage.exists(key):
            default_storage.delete(key)


def audio_url(key: str, viewer: AbstractBaseUser | AnonymousUser) -> str:
    """Return a short-lived URL to stored audio that only `viewer` (a logged-in user) may open.

    "" when there is no key. The URL reveals nothing about the file's author.
    """
    if not key:
        return ""
    if viewer.pk is None:
        raise ValueError("audio links are made for a logged-in viewer")
    token = signing.dumps({"key": key, "viewer": viewer.pk}, salt=_SIGNING_SALT, compress=True)
    return reverse("signed_media", args=[token])


def key_for_viewer(token: str, viewer: AbstractBaseUser | AnonymousUser | int) -> str | None:
    """Return the storage key a token names when it is genuine, unexpired and made for `viewer`
    (a user, or a user's id)."""
    viewer_id = viewer if isinstance(viewer, int) else viewer.pk
    try:
        payload = signing.loads(token, salt=_SIGNING_SALT, max_age=settings.AUDIO_URL_TTL_SECONDS)
    except signing.BadSignature:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("key"), str):
        return None
    if payload.get("viewer") is None or payload.get("viewer") != viewer_id:
        return None
    return str(payload["key"])


# Someone without an account who works a placeholder account's queue (a crowd rater holding a
# study seat, `evaluation.studies.crowd`) hears audio as that placeholder: the pages that admit
# them put its id in their session under this key, and their links are signed for it. They are
# not logged in, so no other page opens for them.
STAND_IN_VIEWER_SESSION_KEY = "media_stand_in_viewer"


def media_viewer_id(request: HttpRequest) -> int | None:
    """Return whom audio is served to on this request: the logged-in user, else the session's stand-in."""
    if request.user.is_authenticated:
        return int(request.user.pk)
    stand_in = request.session.get(STAND_IN_VIEWER_SESSION_KEY)
    return stand_in if isinstance(stand_in, int) else None


@require_GET
def serve_signed_media(request: HttpRequest, token: str) -> HttpResponse:
    """Serve stored audio named by a signed, unexpired token made for this user (Range supported),
    and record the bytes sent to them (`webapp.listening`: what proves they could have heard it)."""
    viewer_id = media_viewer_id(request)
    if viewer_id is None:
        return redirect_to_login(request.get_full_path())
    key = key_for_viewer(token, viewer_id)
    if key is None:
        raise Http404("This link has expired, is not valid, or was made for someone else.")
    if not default_storage.exists(key):
        raise Http404("No such file.")
    size = default_storage.size(key)
    content_type = mimetypes.guess_type(key)[0] or "application/octet-stream"
    match = _RANGE.match(request.headers.get("Range", ""))
    if match and (match.group(1) or match.group(2)):
        if match.group(1):
            start = int(match.group(1))
            end = int(match.group(2)) if match.group(2) else start + OPEN_RANGE_LIMIT - 1
        else:
            start, end = max(0, size - int(match.group(2))), size - 1
        end = min(end, size - 1)
        if start > end:
            response = HttpResponse(status=416)
            response["Content-Range"] = f"bytes */{size}"
            return response
        body = read_media_range(key, start, end)
        response = HttpResponse(body, status=206, content_type=content_type)
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
        # A range is answered from memory in one piece, so it counts as sent when it is made.
        record_served(viewer_id, key, start, start + len(body) - 1, size)
    else:
        streamed = _sent_and_recorded(default_storage.open(key, "rb"), viewer_id, key, size)
        response = StreamingHttpResponse(streamed, content_type=content_type)  # type: ignore[assignment]
        response["Content-Length"] = str(size)
    response["Accept-Ranges"] = "bytes"
    response["Cache-Control"] = "private, max-age=60"
    # No filename in Content-Disposition: downloads must not carry any author information.
    response["Content-Disposition"] = "inline"
    return response


def _sent_and_recorded(handle: IO[bytes], viewer_id: int, key: str, size: int) -> Iterator[bytes]:
    """Yield the file in chunks; when the answer ends (finished, or the client went away), record
    the bytes that were handed on, which the listening gates (`webapp.listening`) count as heard."""
    sent = 0
    try:
        while chunk := handle.read(_CHUNK):
            yield chunk
            # Counted once the server asks for more: a chunk it never took was never sent.
            sent += len(chunk)
    finally:
        handle.close()
        record_served(viewer_id, key, 0, sent - 1, size)
