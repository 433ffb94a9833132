"""Uploading outputs through the API: a zip, or rows naming their audio by URL; all or nothing."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.test import Client

from evaluation.outputs.models import ModelOutput, System
from tests.evaluation.judging_support import BenchmarkItemFactory, echochat_text, jsonl, zip_of
from tests.factories import tiny_wav
from webapp.api.tokens import create_token

pytestmark = pytest.mark.usefixtures("media_root")


@pytest.fixture
def admin_api(users) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {create_token(users['admin'], 'tests').secret}")


@pytest.fixture
def audio_server(tmp_path: Path) -> Iterator[str]:
    for n in range(2):
        (tmp_path / f"EE-{n}.wav").write_bytes(tiny_wav(frequency=220 + 20 * n))
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _upload(client: Client, system: System, rows: bytes, **extra: object) -> object:
    from django.core.files.uploadedfile import SimpleUploadedFile

    files = {"rows": SimpleUploadedFile("outputs.jsonl", rows), **extra}
    return client.post(f"/api/systems/{system.pk}/outputs/", files)


def test_outputs_upload_as_a_zip_and_list_with_their_status(admin_api) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    BenchmarkItemFactory.create(external_id="EE-0")
    system = System.objects.create(name="S")
    audio = SimpleUploadedFile("audio.zip", zip_of({"EE-0.wav": tiny_wav()}))
    response = _upload(
        admin_api, system, jsonl({"item_id": "EE-0", "output": echochat_text()}), audio_zip=audio
    )
    assert response.status_code == 201, response.content  # type: ignore[attr-defined]
    [row] = admin_api.get(f"/api/systems/{system.pk}/outputs/").json()["results"]
    assert (row["item"], row["structured"], row["has_audio"], row["judgements"]) == ("EE-0", True, True, 0)


def test_outputs_whose_rows_name_audio_urls_are_fetched(admin_api, audio_server) -> None:
    for n in range(2):
        BenchmarkItemFactory.create(external_id=f"EE-{n}")
    system = System.objects.create(name="S")
    rows = jsonl(
        *(
            {"item_id": f"EE-{n}", "output": echochat_text(), "audio": f"{audio_server}/EE-{n}.wav"}
            for n in range(2)
        )
    )
    response = _upload(admin_api, system, rows)
    assert response.status_code == 201, response.content  # type: ignore[attr-defined]
    assert ModelOutput.objects.filter(system=system).exclude(response_audio_key="").count() == 2


def test_one_unreachable_audio_url_imports_nothing(admin_api, audio_server) -> None:
    for n in range(2):
        BenchmarkItemFactory.create(external_id=f"EE-{n}")
    system = System.objects.create(name="S")
    rows = jsonl(
        {"item_id": "EE-0", "output": echochat_text(), "audio": f"{audio_server}/EE-0.wav"},
        {"item_id": "EE-1", "output": echochat_text(), "audio": f"{audio_server}/missing.wav"},
    )
    response = _upload(admin_api, system, rows)
    assert response.status_code == 400  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert "could not be fetched" in body["detail"] and "missing.wav" in body["problems"][0]
    assert not ModelOutput.objects.exists()


def test_a_bad_row_imports_nothing_and_says_which_line(admin_api) -> None:
    BenchmarkItemFactory.create(external_id="EE-0")
    system = System.objects.create(name="S", text_only=True)
    rows = jsonl({"item_id": "EE-0", "output": echochat_text()}, {"item_id": "EE-404", "output": "x"})
    response = _upload(admin_api, system, rows)
    assert response.status_code == 400  # type: ignore[attr-defined]
    assert response.json()["problems"] == ["line 2 (EE-404): unknown item: no item has this id"]  # type: ignore[attr-defined]
    assert not ModelOutput.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/EE-0.wav",
        "http://localhost/EE-0.wav",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5/EE-0.wav",
        "http://[::1]/EE-0.wav",
    ],
)
def test_audio_urls_inside_the_servers_network_are_refused(admin_api, url: str, strict_outbound) -> None:
    BenchmarkItemFactory.create(external_id="EE-0")
    system = System.objects.create(name="S")
    rows = jsonl({"item_id": "EE-0", "output": echochat_text(), "audio": url})

    response = _upload(admin_api, system, rows)

    assert response.status_code == 400  # type: ignore[attr-defined]
    assert "internal address" in response.content.decode()  # type: ignore[attr-defined]
    assert not system.outputs.exists()
