"""Response audio named by URL in the outputs JSONL ("audio": "https://…/EE-0001.wav"): fetched once,
before validation, so an unreachable or oversized file is reported per row and nothing is imported."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from evaluation.outputs.audio_sources import AudioTooLarge
from evaluation.outputs.parsing import Problem, parse_rows

URL_SCHEMES = ("http://", "https://")
FETCH_TIMEOUT_S = 30.0


def audio_urls(jsonl: bytes) -> list[tuple[int, str, str]]:
    """Return (line, item id, URL) of every row whose audio is an http(s) URL."""
    rows, _ = parse_rows(jsonl)
    return [(row.line, row.label, row.audio_name) for row in rows if row.audio_name.startswith(URL_SCHEMES)]


class UrlAudioSource:
    """Audio files fetched from the URLs rows name; `problems` holds each file that could not be had."""

    def __init__(self, wanted: Iterable[tuple[int, str, str]], client: httpx.Client | None = None) -> None:
        self._files: dict[str, bytes] = {}
        self.problems: list[Problem] = []
        # No redirects: the admin named these addresses, a server must not send the fetch elsewhere.
        http = client or httpx.Client(timeout=FETCH_TIMEOUT_S, follow_redirects=False)
        for line, item_id, url in wanted:
            if url in self._files:
                continue
            try:
                refuse_internal_address(url)
                self._files[url] = _fetch(http, url)
            except (httpx.HTTPError, AudioTooLarge, InternalAddress) as exc:
                self.problems.append(Problem(line, item_id, f"audio {url} could not be fetched: {exc}"))

    def names(self) -> frozenset[str]:
        return frozenset(self._files)

    def read(self, name: str) -> bytes:
        return self._files[name]


class InternalAddress(Exception):
    """The URL names a host inside the server's own network."""


def refuse_internal_address(url: str) -> None:
    """Raise InternalAddress when the URL's host resolves to a loopback, private, link-local or
    otherwise non-public address: an import must not make the server fetch from its own network
    (cloud metadata, the database, admin ports). ECHOSTUDIO_OUTPUT_AUDIO_ALLOW_INTERNAL_HOSTS lifts it.
    """
    if settings.OUTPUT_AUDIO_ALLOW_INTERNAL_HOSTS:
        return
    host = urlsplit(url).hostname or ""
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (socket.gaierror, UnicodeError) as exc:
        raise InternalAddress(f"the host {host!r} cannot be resolved") from exc
    for address in addresses:
        if not ipaddress.ip_address(address.split("%")[0]).is_global:
            raise InternalAddress(f"{host} is an internal address ({address}); only public hosts are fetched")


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
