"""Listening as the server sees it, for tests: fetch stored audio through its real link.

Every gate that needs a person to have heard a recording (`webapp.listening`) reads what the
audio view sent them. These helpers fetch through that view with the test client, so a test that
needs "played to the end" goes through the same road a browser does, never around it.
"""

from __future__ import annotations

import html
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from webapp.models import AudioFetch, User
from webapp.storage import audio_url


def client_of(user: User) -> Client:
    """Return a test client logged in as `user`."""
    client = Client()
    client.force_login(user)
    return client


def fetch_audio(client: Client, user: User, key: str, ranges: tuple[str, ...] = ()) -> bytes:
    """GET the stored audio at `key` through its signed link for `user`, whole or as these Range
    headers ("bytes=0-99", ...), and return the bytes received (the body is read, so sent)."""
    url = audio_url(key, user)
    if not ranges:
        response = client.get(url)
        assert response.status_code == 200, response.status_code
        return b"".join(response.streaming_content)  # type: ignore[attr-defined]
    body = b""
    for header in ranges:
        response = client.get(url, headers={"Range": header})
        assert response.status_code == 206, response.status_code
        body += response.content
    return body


def listen(user: User, *keys: str, ago: timedelta = timedelta(minutes=15)) -> None:
    """Let `user` have played each stored audio to the end: fetched whole through its link, `ago`
    before now (the fetch's record is moved back, as time passing would)."""
    client = client_of(user)
    for key in keys:
        if key:
            fetch_audio(client, user, key)
            AudioFetch.objects.filter(user=user, key=key).update(fetched_at=timezone.now() - ago)


def play_links(client: Client, user: User, urls: list[str], ago: timedelta = timedelta(minutes=1)) -> None:
    """Fetch every audio link a page gave `user` whole, as its players do, and move those fetches
    `ago` back, as if the audio had been playing since."""
    for url in urls:
        response = client.get(html.unescape(url))
        assert response.status_code == 200, (url, response.status_code)
        b"".join(response.streaming_content)  # type: ignore[attr-defined]
    AudioFetch.objects.filter(user=user).update(fetched_at=timezone.now() - ago)
