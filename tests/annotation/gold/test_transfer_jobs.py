"""Gold export and import from the gold page: jobs, a downloadable archive, and an upload."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.gold.adjudication import adjudicate_item
from annotation.gold.models import GoldReference
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.recording.models import Item
from tests.annotation.labelling.support import perception, submitted, tom
from tests.support.studio import empty_the_studio
from webapp.jobs import run_job
from webapp.models import Job, JobStatus


@pytest.fixture
def gold_item(users, annotations):
    for annotation in annotations:
        submitted(annotation)
    item = annotations[0].item
    adjudicate_item(item.pk, lead=users["lead"], perception=perception(), tom=tom(), expected_gold_version=0)
    return item


def latest(kind: str) -> Job:
    return Job.objects.filter(kind=kind).latest("created_at")


def test_a_lead_exports_and_downloads_the_archive(
    client_for, gold_item, django_capture_on_commit_callbacks
) -> None:
    lead = client_for("lead")
    with django_capture_on_commit_callbacks(execute=False):
        assert lead.post(reverse("annotation:start_gold_export")).status_code == 302
    job = latest(transfer_jobs.EXPORT_KIND)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.result is not None
    # an export is all or nothing: its tally reads succeeded, with every row
    assert job.result["rows"] == {**job.result["rows"], "total": 1, "failed": 0, "status": "succeeded"}
    assert job.message == "Succeeded: all 1 rows done"
    page = lead.get(reverse("annotation:gold")).content.decode()
    assert f'data-testid="download-{job.pk}">Download (1 rows)</a>' in page
    response = lead.get(reverse("annotation:download_gold_export", args=[job.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith('attachment; filename="echoeval-gold-')
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert {"gold.jsonl", "audio/EE-0001.wav", "data/test-00000-of-00001.parquet", "README.md"} <= set(
        archive.namelist()
    )


def test_an_uploaded_export_is_imported(
    client_for, users, gold_item, django_capture_on_commit_callbacks
) -> None:
    lead = client_for("lead")
    with django_capture_on_commit_callbacks(execute=False):
        lead.post(reverse("annotation:start_gold_export"))
    run_job(latest(transfer_jobs.EXPORT_KIND).pk)
    archive = b"".join(
        lead.get(
            reverse("annotation:download_gold_export", args=[latest(transfer_jobs.EXPORT_KIND).pk])
        ).streaming_content
    )
    empty_the_studio()
    upload = SimpleUploadedFile("echoeval-gold.zip", archive, content_type="application/zip")
    with django_capture_on_commit_callbacks(execute=False):
        assert lead.post(reverse("annotation:start_gold_import"), {"export": upload}).status_code == 302
    job = latest(transfer_jobs.IMPORT_KIND)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.result is not None, job.error
    assert (job.result["rows"]["total"], job.result["gold_created"], job.result["annotations_imported"]) == (
        1,
        1,
        3,
    )
    assert GoldReference.objects.get(is_current=True).adjudicated_by == users["lead"]


def test_a_bad_import_fails_with_every_problem_in_the_log(
    client_for, users, django_capture_on_commit_callbacks
) -> None:
    rows = b'{"id": "EE-9", "text": "Hello there", "scenario": "implicit"}\n'
    with django_capture_on_commit_callbacks(execute=False):
        job = transfer_jobs.start_import(started_by=users["lead"], name="gold.jsonl", data=rows)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("GoldImportError: Nothing was imported: row 1, target_emotion")
    assert "row 1, perception/tom: both must be objects" in job.log
    assert not Item.objects.exists()


def test_files_that_cannot_be_exports_are_refused_at_once(client_for) -> None:
    lead = client_for("lead")
    upload = SimpleUploadedFile("notes.txt", b"hello")
    response = lead.post(reverse("annotation:start_gold_import"), {"export": upload}, follow=True)
    assert "Upload a .zip of an export folder" in response.content.decode()
    assert not Job.objects.filter(kind=transfer_jobs.IMPORT_KIND).exists()


def test_downloads_need_a_finished_export(client_for, users) -> None:
    job = Job.objects.create(kind=transfer_jobs.EXPORT_KIND, started_by=users["lead"])
    assert (
        client_for("lead").get(reverse("annotation:download_gold_export", args=[job.pk])).status_code == 404
    )
    assert (
        client_for("annotator").get(reverse("annotation:download_gold_export", args=[job.pk])).status_code
        == 403
    )
