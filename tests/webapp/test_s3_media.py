"""Media on S3: stored under random keys and fetched by the browser through presigned URLs."""

from __future__ import annotations

import urllib.request

from tests.support.s3_server import S3Server, use_s3_media
from webapp.storage import audio_url, new_media_key, read_media, save_media


def test_audio_round_trips_through_s3_and_its_presigned_url(settings, s3_server: S3Server) -> None:
    s3_server.client().create_bucket(Bucket="echostudio-media")
    use_s3_media(
        settings,
        "echostudio-media",
        endpoint_url=s3_server.endpoint_url,
        region_name="us-east-1",
        file_overwrite=False,
    )
    key = save_media(new_media_key("take", "wav"), b"RIFF-take-bytes")
    assert read_media(key) == b"RIFF-take-bytes"

    url = audio_url(key)
    assert "X-Amz-Signature=" in url and "X-Amz-Expires=300" in url
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.read() == b"RIFF-take-bytes"
    unsigned = url.split("?", 1)[0]
    try:
        urllib.request.urlopen(unsigned, timeout=10)
        reachable_without_signature = True
    except urllib.error.HTTPError as error:
        reachable_without_signature = error.code != 403
    assert not reachable_without_signature
