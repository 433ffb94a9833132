"""An authenticated connection to an EchoStudio server and the upload/download progress bars."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import IO, Any

import httpx
from tqdm import tqdm

from webapp.lib.visible import visible

DEFAULT_URL = "http://127.0.0.1:8000"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# A write whose answer was lost (a restarted web worker, a dropped connection) is sent again with
# the same Idempotency-Key, so the server answers it instead of applying it twice.
WRITE_ATTEMPTS = 4
RETRY_PAUSE_SECONDS = 0.5


class ClientError(Exception):
    """The server refused a request; the message is its `detail` and `problems`."""


class ProgressReader:
    """A file wrapper that advances a progress bar as httpx reads it for a multipart upload."""

    def __init__(self, handle: IO[bytes], bar: tqdm) -> None:
        self.handle = handle
        self.bar = bar

    def read(self, size: int = -1) -> bytes:
        chunk = self.handle.read(size)
        self.bar.update(len(chunk))
        return chunk

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.handle.seek(offset, whence)

    def tell(self) -> int:
        return self.handle.tell()


class Studio:
    """The API at `url`, authenticated with a personal token (`Authorization: Token ...`)."""

    def __init__(self, url: str | None = None, token: str | None = None, *, quiet: bool = False) -> None:
        url = (url or os.environ.get("ECHOSTUDIO_URL") or DEFAULT_URL).rstrip("/")
        token = token or os.environ.get("ECHOSTUDIO_TOKEN", "")
        if not token:
            raise ClientError(
                "Give a token with --token or ECHOSTUDIO_TOKEN (create one on your account page)."
            )
        self.quiet = quiet
        self.http = httpx.Client(
            base_url=f"{url}/api/", headers={"Authorization": f"Token {token}"}, timeout=300.0
        )

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request; raise ClientError with the server's explanation on any error status.

        A write carries an Idempotency-Key and is sent again, with the same key, when the
        connection fails before an answer arrives (webapp.idempotency on the server)."""
        if method.upper() not in WRITE_METHODS:
            response = self.http.request(method, path, **kwargs)
        else:
            response = self._write(method, path, **kwargs)
        if response.is_error:
            raise ClientError(_explain(response))
        return response

    def _write(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Idempotency-Key": str(uuid.uuid4()), **kwargs.pop("headers", {})}
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            _rewind(kwargs.get("files"))
            try:
                return self.http.request(method, path, headers=headers, **kwargs)
            except httpx.TransportError:
                if attempt == WRITE_ATTEMPTS:
                    raise
                time.sleep(RETRY_PAUSE_SECONDS * attempt)
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs).json()

    def all_pages(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Yield every row of a cursor-paginated list, following `next` links."""
        page = self.json("GET", path, params=params)
        while True:
            yield from page["results"]
            if not page.get("next"):
                return
            page = self.json("GET", page["next"])

    def one_named(self, path: str, name: str, what: str) -> dict[str, Any]:
        """Return the single row of `path` called `name` (systems, judges)."""
        rows = list(self.all_pages(path, name=name))
        if not rows:
            raise ClientError(f"No {what} is called {name!r}.")
        return rows[0]

    def bar(self, total: float | None, description: str, unit: str = "B") -> tqdm:
        scale = unit == "B"
        return tqdm(
            total=total,
            desc=visible(description, keep=""),
            unit=unit,
            unit_scale=scale,
            disable=self.quiet,
            leave=False,
        )


def _rewind(files: Any) -> None:
    """Seek each uploaded file back to its start, so a retry sends the whole file again."""
    for value in (files or {}).values():
        handle = value[1] if isinstance(value, tuple) else value
        if hasattr(handle, "seek"):
            handle.seek(0)


def _explain(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:500]}"
    lines = [f"HTTP {response.status_code}: {body.get('detail', body)}"]
    lines += [f"  - {problem}" for problem in body.get("problems", [])[:50]]
    return "\n".join(lines)
