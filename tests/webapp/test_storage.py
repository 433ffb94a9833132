"""Audio reaches browsers only through signed, expiring URLs bound to one viewer that say nothing
about who made the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core import signing
from django.test import Client

from tests.support.s3_server import S3Server, use_s3_media
from webapp.listening import Fetched, fetched
from webapp.storage import (
    OPEN_RANGE_LIMIT,
    audio_url,
    delete_media,
    key_for_viewer,
    new_media_key,
    read_media,
    read_media_range,
    save_media,
)


@pytest.fixture
def stored_key(media_root: Path) -> str:
    return save_media(new_media_key("take", "wav"), b"RIFF" + bytes(range(100)))


def test_keys_are_random_and_carry_no_user_data() -> None:
    first, second = new_media_key("take", "wav"), new_media_key("take", "wav")
    assert first != second
    assert re.fullmatch(r"audio/take/[0-9a-f]{32}\.wav", first)
    with pytest.raises(ValueError):
        new_media_key("take", "../../etc")


@pytest.mark.parametrize(
    ("kind", "extension"), [("../etc", "wav"), ("take", "wav/../x"), ("Take", "wav"), ("", "wav")]
)
def test_storage_keys_refuse_path_tricks(kind: str, extension: str) -> None:
    with pytest.raises(ValueError):
        new_media_key(kind, extension)


def test_signed_url_serves_the_file_to_its_viewer(users, client_for, stored_key: str) -> None:
    url = audio_url(stored_key, users["reviewer"])
    assert stored_key not in url and "reviewer" not in url
    response = client_for("reviewer").get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == read_media(stored_key)
    assert response["Content-Disposition"] == "inline"
    # Nothing dates the file either (an upload time would group takes of one batch).
    assert "Last-Modified" not in response and "ETag" not in response


def test_a_url_copied_to_another_account_is_refused(users, client_for, stored_key: str) -> None:
    url = audio_url(stored_key, users["reviewer"])
    for other in ("evaluator", "admin", "actor", "annotator"):
        assert client_for(other).get(url).status_code == 404, other
    assert client_for("reviewer").get(url).status_code == 200


def test_a_url_opened_in_an_anonymous_browser_is_refused(users, stored_key: str) -> None:
    url = audio_url(stored_key, users["reviewer"])
    response = Client().get(url)
    assert response.status_code == 302 and "/login" in response["Location"]


def test_links_are_only_made_for_a_logged_in_viewer(stored_key: str) -> None:
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(ValueError):
        audio_url(stored_key, AnonymousUser())
    assert audio_url("", AnonymousUser()) == ""


def test_range_requests_return_the_asked_bytes(users, client_for, stored_key: str) -> None:
    response = client_for("reviewer").get(audio_url(stored_key, users["reviewer"]), HTTP_RANGE="bytes=4-9")
    assert response.status_code == 206
    assert response.content == bytes(range(6))
    assert response["Content-Range"] == "bytes 4-9/104"


def test_tampered_unbound_or_expired_tokens_are_refused(users, client_for, stored_key: str, settings) -> None:
    client = client_for("reviewer")
    reviewer = users["reviewer"]
    forged = signing.dumps({"key": stored_key, "viewer": reviewer.pk}, salt="another-salt")
    assert client.get(f"/media/a/{forged}").status_code == 404
    # A token of the old shape, naming only a key, opens for nobody.
    unbound = signing.dumps(stored_key, salt="echostudio.media")
    assert key_for_viewer(unbound, reviewer) is None
    assert client.get(f"/media/a/{unbound}").status_code == 404
    url = audio_url(stored_key, reviewer)
    settings.AUDIO_URL_TTL_SECONDS = -1
    assert client.get(url).status_code == 404


def test_deleted_media_is_gone(users, client_for, stored_key: str) -> None:
    url = audio_url(stored_key, users["reviewer"])
    delete_media(stored_key)
    assert client_for("reviewer").get(url).status_code == 404


def test_s3_audio_is_streamed_by_the_app_never_presigned(
    users, client_for, settings, s3_server: S3Server
) -> None:
    s3_server.client().create_bucket(Bucket="echostudio-media")
    use_s3_media(settings, "echostudio-media", endpoint_url=s3_server.endpoint_url, region_name="us-east-1")
    key = save_media(new_media_key("take", "wav"), b"RIFF" + bytes(range(100)))
    url = audio_url(key, users["reviewer"])
    assert url.startswith("/media/a/") and "X-Amz" not in url and key not in url
    response = client_for("reviewer").get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == read_media(key)
    assert response["Content-Disposition"] == "inline"
    ranged = client_for("reviewer").get(url, HTTP_RANGE="bytes=4-9")
    assert ranged.status_code == 206 and ranged.content == bytes(range(6))
    assert client_for("evaluator").get(url).status_code == 404


def _long_take(media_root: Path) -> tuple[str, bytes]:
    data = bytes(i % 251 for i in range(3 * OPEN_RANGE_LIMIT + 1000))  # a pattern that shows misplaced bytes
    return save_media(new_media_key("take", "wav"), data), data


def test_an_open_range_is_answered_in_one_piece_of_at_most_the_limit(
    users, client_for, media_root: Path
) -> None:
    key, data = _long_take(media_root)
    url = audio_url(key, users["reviewer"])

    first = client_for("reviewer").get(url, HTTP_RANGE="bytes=0-")
    later = client_for("reviewer").get(url, HTTP_RANGE=f"bytes={len(data) - 10}-")

    assert first.status_code == 206 and first.content == data[:OPEN_RANGE_LIMIT]
    assert first["Content-Range"] == f"bytes 0-{OPEN_RANGE_LIMIT - 1}/{len(data)}"
    assert later.status_code == 206 and later.content == data[-10:]
    assert later["Content-Range"] == f"bytes {len(data) - 10}-{len(data) - 1}/{len(data)}"
    assert client_for("reviewer").get(url, HTTP_RANGE=f"bytes={len(data)}-").status_code == 416


def test_the_listening_gate_counts_a_file_fetched_in_ranges(users, client_for, media_root: Path) -> None:
    key, data = _long_take(media_root)
    url = audio_url(key, users["reviewer"])
    start = 0
    while start < len(data):  # as a media element streams a take while it plays
        response = client_for("reviewer").get(url, HTTP_RANGE=f"bytes={start}-")
        assert response.status_code == 206
        start += len(response.content)
        assert not fetched(users["reviewer"].pk, key).whole or start == len(data)

    assert fetched(users["reviewer"].pk, key) == Fetched(
        fetched(users["reviewer"].pk, key).first_at, len(data), len(data), whole=True
    )


def test_s3_ranges_read_only_the_asked_bytes(users, client_for, settings, s3_server: S3Server) -> None:
    s3_server.client().create_bucket(Bucket="echostudio-media")
    use_s3_media(settings, "echostudio-media", endpoint_url=s3_server.endpoint_url, region_name="us-east-1")
    data = bytes(i % 251 for i in range(OPEN_RANGE_LIMIT + 5000))
    key = save_media(new_media_key("take", "wav"), data)
    url = audio_url(key, users["reviewer"])

    first = client_for("reviewer").get(url, HTTP_RANGE="bytes=0-")
    rest = client_for("reviewer").get(url, HTTP_RANGE=f"bytes={OPEN_RANGE_LIMIT}-")

    assert first.status_code == 206 and first.content == data[:OPEN_RANGE_LIMIT]
    assert rest.status_code == 206 and rest.content == data[OPEN_RANGE_LIMIT:]
    assert read_media_range(key, 10, 19) == data[10:20]
    assert fetched(users["reviewer"].pk, key).whole
