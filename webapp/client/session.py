"""An authenticated connection to an EchoStudio server and the upload/download progress bars."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import IO, Any

import httpx
from tqdm import tqdm

from webapp.lib.backoff import Backoff
from webapp.lib.visible import visible

DEFAULT_URL = "http://127.0.0.1:8000"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# A request whose answer was lost (a restarted web worker, a dropped connection), or that the
# server answered "unavailable for a moment" (503 while its database or broker restarts; 502 and
# 504 from a proxy while the web process restarts), is sent again after a capped exponential wait,
# or the server's Retry-After when longer: about 25 s in all. A write keeps its Idempotency-Key, so
# the server answers a copy instead of applying it twice.
RETRY_BACKOFF = Backoff(first=0.5, cap=10.0, retries=6)
RETRY_STATUSES = frozenset({502, 503, 504})


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

        A write carries an Idempotency-Key (webapp.idempotency on the server). Any request is sent
        again, a write with the same key, when the connection fails before an answer arrives or
        the server is unavailable for a moment (RETRY_BACKOFF, RETRY_STATUSES)."""
        headers = dict(kwargs.pop("headers", None) or {})
        if method.upper() in WRITE_METHODS:
            headers = {"Idempotency-Key": str(uuid.uuid4()), **headers}
        response = self._send_retrying(method, path, headers=headers, **kwargs)
        if response.is_error:
            raise ClientError(_explain(response))
        return response

    def _send_retrying(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        for retry in range(RETRY_BACKOFF.retries + 1):
            last = retry == RETRY_BACKOFF.retries
            _rewind(kwargs.get("files"))
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError:
                if last:
                    raise
                asked = None
            else:
                if response.status_code not in RETRY_STATUSES or last:
                    return response
                asked = _retry_after(response)
            self.sleep(RETRY_BACKOFF.wait_for(retry, asked))
        raise AssertionError("unreachable")

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds)

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


def _retry_after(response: httpx.Response) -> float | None:
    """Return the seconds of a `Retry-After: <seconds>` header (an HTTP date is not sent by us)."""
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return None


def _explain(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:500]}"
    lines = [f"HTTP {response.status_code}: {body.get('detail', body)}"]
    lines += [f"  - {problem}" for problem in body.get("problems", [])[:50]]
    return "\n".join(lines)
