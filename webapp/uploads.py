"""The cap on what one request may upload (REQUEST_UPLOAD_MAX_BYTES), before Django writes a byte.

First in FILE_UPLOAD_HANDLERS: a request whose Content-Length is over the cap is refused before
its body is read, and the bytes that do arrive are counted before each chunk is passed on to the
handlers that keep it (in memory, or in a temporary file). Django's own limits cover form fields
only (DATA_UPLOAD_MAX_MEMORY_SIZE), so an upload of any size used to be written to disk in full
before a view could look at it. Each view's own, smaller caps (a take's UPLOAD_MAX_BYTES, an
archive's unpacked size) apply after this one.
"""

from __future__ import annotations

from typing import IO, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler


def _too_big() -> RequestDataTooBig:
    cap = int(settings.REQUEST_UPLOAD_MAX_BYTES)
    return RequestDataTooBig(
        f"The upload is larger than {cap / 2**20:,.0f} MB (ECHOSTUDIO_REQUEST_UPLOAD_MAX_BYTES)."
    )


class UploadCap(FileUploadHandler):
    """Refuse (400) a request that uploads more than REQUEST_UPLOAD_MAX_BYTES; keep nothing itself."""

    def handle_raw_input(
        self,
        input_data: IO[bytes],
        META: dict[str, Any],
        content_length: int,
        boundary: str,
        encoding: str | None = None,
    ) -> None:
        self.received = 0
        if content_length > settings.REQUEST_UPLOAD_MAX_BYTES:
            raise _too_big()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received = getattr(self, "received", 0) + len(raw_data)
        if self.received > settings.REQUEST_UPLOAD_MAX_BYTES:
            raise _too_big()
        return raw_data  # on to the handler that keeps it

    def file_complete(self, file_size: int) -> None:
        return None
