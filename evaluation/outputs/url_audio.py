"""Response audio named by URL in the outputs JSONL ("audio": "https://…/EE-0001.wav"): fetched once,
before validation, so an unreachable or oversized file is reported per row and nothing is imported."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.conf import settings

from evaluation.outputs.audio_sources import AudioTooLarge
from evaluation.outputs.parsing import Problem, parse_rows
from webapp.outbound import outbound_policy

if TYPE_CHECKING:
    import httpx

URL_SCHEMES = ("http://", "https://")
FETCH_TIMEOUT_S = 30.0


def audio_urls(jsonl: bytes) -> list[tuple[int, str, str]]:
    """Return (line, item id, URL) of every row whose audio is an http(s) URL."""
    rows, _ = parse_rows(jsonl)
    return [(row.line, row.label, row.audio_name) for row in rows if row.audio_name.startswith(URL_SCHEMES)]


class UrlAudioSource:
    """Audio files fetched from the URLs rows name; `problems` holds each file that could not be had."""

    def __init__(self, wanted: Iterable[tuple[int, str, str]], client: httpx.Client | None = None) -> None:
        # Loaded here, not with the module: the outputs API imports it and most uploads name no URL.
        import httpx

        from webapp.lib.pinned_http import http_client

        self._files: dict[str, bytes] = {}
        self.problems: list[Problem] = []
        # No redirects: the admin named these addresses, a server must not send the fetch elsewhere.
        # The outbound policy refuses internal hosts and connects to the address it checked, so a
        # name cannot resolve to a public address for the check and to 127.0.0.1 for the fetch.
        http = client or http_client(outbound_policy(), timeout=FETCH_TIMEOUT_S, follow_redirects=False)
        for line, item_id, url in wanted:
            if url in self._files:
                continue
            try:
                self._files[url] = _fetch(http, url)
            except (httpx.HTTPError, AudioTooLarge) as exc:
                self.problems.append(Problem(line, item_id, f"audio {url} could not be fetched: {exc}"))

    def names(self) -> frozenset[str]:
        return frozenset(self._files)

    def read(self, name: str) -> bytes:
        return self._files[name]


def _fetch(http: httpx.Client, url: str) -> bytes:
    limit = settings.UPLOAD_MAX_BYTES
    with http.stream("GET", url) as response:
        response.raise_for_status()
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise AudioTooLarge(f"more than {limit} bytes")
            chunks.append(chunk)
    return b"".join(chunks)
