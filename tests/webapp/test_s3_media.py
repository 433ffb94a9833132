"""Media on S3: stored under random keys, private to the bucket, and reached by browsers only
through the app (see test_storage)."""

from __future__ import annotations

import urllib.error
import urllib.request

from django.core.files.storage import default_storage

from tests.support.s3_server import S3Server, use_s3_media
from webapp.storage import new_media_key, read_media, save_media


def test_audio_round_trips_through_s3_and_the_bucket_is_private(settings, s3_server: S3Server) -> None:
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

    unsigned = str(default_storage.url(key)).split("?", 1)[0]
    try:
        urllib.request.urlopen(unsigned, timeout=10)
        reachable_without_signature = True
    except urllib.error.HTTPError as error:
        reachable_without_signature = error.code != 403
    assert not reachable_without_signature
