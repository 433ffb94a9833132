"""Every upload has a size cap checked before it is written, and every zip reader refuses a bomb on
its listing: gold import (a 1 MB zip once wrote 1.07 GB), output audio, EchoMind sets."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.gold.transfer import jobs as transfer_jobs
from evaluation.echomind.deliveries import DeliveryProblem
from evaluation.echomind.transfer import read_archive
from evaluation.outputs.audio_sources import AudioSourceRefused, ZipAudioSource
from webapp.jobs import run_job
from webapp.models import Job, JobStatus

MiB = 2**20


def deflated(*members: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in members:
            zipped.writestr(name, data)
    return buffer.getvalue()


BOMB = deflated(("gold.jsonl", bytes(64 * MiB)))  # ~64 KB expanding 1,000-fold


def test_a_gold_import_bomb_is_refused_before_anything_is_unpacked(tmp_path: Path) -> None:
    archive = tmp_path / "upload.zip"
    archive.write_bytes(BOMB)
    with pytest.raises(ValueError, match=r"expands 1,0\d\d-fold; at most 100-fold"):
        transfer_jobs._unpacked(archive, tmp_path / "export")
    assert list((tmp_path / "export").iterdir()) == []


@pytest.mark.django_db
def test_a_gold_import_bomb_fails_its_job_in_words(
    users: Any, media_root: Path, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        job = transfer_jobs.start_import(started_by=users["admin"], name="export.zip", data=BOMB)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "zip bomb" in job.error


def test_an_output_audio_bomb_is_refused_on_its_listing() -> None:
    with pytest.raises(AudioSourceRefused, match="expands"):
        ZipAudioSource(io.BytesIO(deflated(("EE-1.wav", bytes(8 * MiB)))))


def test_an_echomind_set_bomb_is_refused_before_it_fills_memory() -> None:
    with pytest.raises(DeliveryProblem, match="expands"):
        read_archive(deflated(("set/Script/script_info.json", bytes(32 * MiB))))


@pytest.mark.django_db
def test_an_upload_over_the_request_cap_is_refused_before_it_is_kept(
    client_for: Any, settings: Any, media_root: Path
) -> None:
    settings.REQUEST_UPLOAD_MAX_BYTES = 64 * 1024
    big = SimpleUploadedFile("export.zip", b"PK" + bytes(100 * 1024), content_type="application/zip")
    response = client_for("lead").post(reverse("annotation:start_gold_import"), {"export": big})
    assert response.status_code == 400
    assert not Job.objects.exists()
    assert not any(path.is_file() for path in media_root.rglob("*"))


@pytest.mark.django_db
def test_an_upload_under_the_request_cap_goes_through(
    client_for: Any, settings: Any, media_root: Path
) -> None:
    settings.REQUEST_UPLOAD_MAX_BYTES = 64 * 1024
    small = SimpleUploadedFile("gold.jsonl", b"{}\n", content_type="application/json")
    response = client_for("lead").post(reverse("annotation:start_gold_import"), {"export": small})
    assert response.status_code == 302
    assert Job.objects.filter(kind=transfer_jobs.IMPORT_KIND).exists()
