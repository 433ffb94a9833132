"""Audio reaches browsers only through signed, expiring URLs that say nothing about who made it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core import signing

from tests.support.s3_server import use_s3_media
from webapp.storage import audio_url, delete_media, new_media_key, read_media, save_media


@pytest.fixture
def stored_key(media_root: Path) -> str:
    return save_media(new_media_key("take", "wav"), b"RIFF" + bytes(range(100)))


def test_keys_are_random_and_carry_no_user_data() -> None:
    first, second = new_media_key("take", "wav"), new_media_key("take", "wav")
    assert first != second
    assert re.fullmatch(r"audio/take/[0-9a-f]{32}\.wav", first)
    with pytest.raises(ValueError):
        new_media_key("take", "../../etc")


def test_signed_url_serves_the_file_to_logged_in_users(client_for, stored_key: str) -> None:
    url = audio_url(stored_key)
    assert stored_key not in url
    response = client_for("reviewer").get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == read_media(stored_key)
    assert response["Content-Disposition"] == "inline"


def test_signed_url_needs_login(client, stored_key: str) -> None:
    assert client.get(audio_url(stored_key)).status_code == 302


def test_range_requests_return_the_asked_bytes(client_for, stored_key: str) -> None:
    response = client_for("reviewer").get(audio_url(stored_key), HTTP_RANGE="bytes=4-9")
    assert response.status_code == 206
    assert response.content == bytes(range(6))
    assert response["Content-Range"] == "bytes 4-9/104"


def test_tampered_or_expired_tokens_are_refused(client_for, stored_key: str, settings) -> None:
    client = client_for("reviewer")
    forged = signing.dumps(stored_key, salt="another-salt")
    assert client.get(f"/media/a/{forged}").status_code == 404
    settings.AUDIO_URL_TTL_SECONDS = -1
    assert client.get(audio_url(stored_key)).status_code == 404


def test_deleted_media_is_gone(client_for, stored_key: str) -> None:
    url = audio_url(stored_key)
    delete_media(stored_key)
    assert client_for("reviewer").get(url).status_code == 404


def test_s3_audio_urls_are_presigned_and_short_lived(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-example")
    use_s3_media(settings, "echostudio-media", region_name="eu-west-1")
    key = new_media_key("take", "wav")
    url = audio_url(key)
    assert url.startswith("https://echostudio-media.s3")
    assert "X-Amz-Expires=300" in url and "X-Amz-Signature=" in url
    assert key in url and "actor" not in url
