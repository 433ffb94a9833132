"""A real S3-compatible HTTP server on 127.0.0.1 (moto's server) for tests of the S3 code paths.

boto3 talks to it over HTTP exactly as it talks to AWS: signing, listing, multipart reads. Only the
endpoint differs, which is how production points at MinIO or another S3-compatible store too.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class S3Server:
    endpoint_url: str

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name="us-east-1")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_s3_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """Start the server, point boto3 at it through the standard environment variables, stop it after."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_S3_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(name, value)
    try:
        yield S3Server(endpoint)
    finally:
        server.stop()


@pytest.fixture
def s3_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    with running_s3_server(monkeypatch) as server:
        yield server


def use_s3_media(settings: Any, bucket: str, **options: Any) -> None:
    """Point Django's default storage at an S3 bucket with presigned 300-second URLs (as in production)."""
    settings.S3_BUCKET = bucket
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": bucket,
                "querystring_auth": True,
                "querystring_expire": 300,
                "signature_version": "s3v4",
                **options,
            },
        },
    }
