"""What the audio view sent whom (webapp.listening): bytes actually handed on, per viewer and file."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections
from django.test import RequestFactory
from django.urls import resolve
from django.utils import timezone

from tests.factories import tiny_wav
from tests.support.listening import client_of
from webapp.listening import fetched, listening_refusal, record_served, stored_audio_seconds
from webapp.models import User
from webapp.storage import _CHUNK, audio_url, new_media_key, save_media

SIZE = 3 * _CHUNK + 10  # several chunks of the streamed answer


@pytest.fixture
def key(media_root: Path) -> str:
    return save_media(new_media_key("take", "wav"), bytes(SIZE))


def test_a_whole_file_counts_once_its_body_was_read(users: dict[str, User], key: str) -> None:
    reviewer = users["reviewer"]
    response = client_of(reviewer).get(audio_url(key, reviewer))
    assert fetched(reviewer.pk, key).first_at is None  # an answer not read yet sent nothing

    assert len(b"".join(response.streaming_content)) == SIZE  # type: ignore[attr-defined]

    sent = fetched(reviewer.pk, key)
    assert sent.whole and sent.bytes_sent == SIZE and sent.first_at is not None
    assert fetched(users["annotator"].pk, key).first_at is None  # someone else heard nothing


def test_a_stream_left_after_its_first_chunk_counts_only_what_was_taken(
    users: dict[str, User], key: str
) -> None:
    reviewer = users["reviewer"]
    # the view itself, as a WSGI server runs it: the test client would read the answer to the end
    url = audio_url(key, reviewer)
    request = RequestFactory().get(url)
    request.user = reviewer
    view = resolve(url)
    response = view.func(request, *view.args, **view.kwargs)
    chunks = iter(response)
    next(chunks)
    next(chunks)  # asking for the second chunk hands the first one on
    # the client goes away and the server closes the answer (keeping the test's connection open,
    # as the test client does when it closes an answer)
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)

    sent = fetched(reviewer.pk, key)
    assert (sent.bytes_sent, sent.whole) == (_CHUNK, False)
    assert listening_refusal(reviewer.pk, key, "the take", seconds=0.0) == (
        f"Play the take to the end: the server has sent you only {100 * _CHUNK // SIZE}% of its audio."
    )


def test_ranges_add_up_and_a_refused_range_sends_nothing(users: dict[str, User], key: str) -> None:
    reviewer = users["reviewer"]
    client, url = client_of(reviewer), audio_url(key, reviewer)
    assert client.get(url, headers={"Range": f"bytes={SIZE}-"}).status_code == 416
    assert fetched(reviewer.pk, key).first_at is None

    assert client.get(url, headers={"Range": "bytes=-10"}).status_code == 206  # the last ten bytes
    assert client.get(url, headers={"Range": f"bytes=0-{SIZE - 11}"}).status_code == 206
    assert fetched(reviewer.pk, key).whole


def test_the_time_since_the_first_byte_must_cover_the_length(users: dict[str, User]) -> None:
    reviewer, now = users["reviewer"], timezone.now()
    record_served(reviewer.pk, "audio/take/a.wav", 0, 99, 100, at=now - timedelta(seconds=2))
    record_served(reviewer.pk, "audio/take/a.wav", 0, 99, 100, at=now)  # played again later
    assert listening_refusal(reviewer.pk, "audio/take/a.wav", "the take", seconds=1.5, now=now) is None
    assert "it lasts 3.0 s" in (
        listening_refusal(reviewer.pk, "audio/take/a.wav", "the take", seconds=3.0, now=now) or ""
    )
    assert listening_refusal(reviewer.pk, "", "no audio at all", seconds=3.0, now=now) is None


def test_a_stored_wav_tells_its_own_length(media_root: Path) -> None:
    half_a_second = save_media(new_media_key("take", "wav"), tiny_wav(seconds=0.5))
    assert stored_audio_seconds(half_a_second) == pytest.approx(0.5, abs=0.01)
    assert stored_audio_seconds(save_media(new_media_key("take", "wav"), b"not a wav")) == 0.0
