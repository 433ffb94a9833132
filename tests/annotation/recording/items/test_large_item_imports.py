"""100,000-row imports through the page and the command line: a bad row near the end is reported
exactly as one near the start, and nothing is written; large uploads run as a job with progress."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.recording import views
from annotation.recording.items import import_items
from annotation.recording.models import Item
from webapp.jobs import run_job
from webapp.models import Job, JobStatus

ROWS = 100_000
SCENARIOS = ("implicit", "audio-dominant", "high-arousal", "modality-conflict", "emotion-shift")
BAD_SCENARIO = (
    "'sarcastic' is not one of implicit, audio-dominant, high-arousal, modality-conflict, emotion-shift."
)


def csv_file(bad_row: int | None = None, rows: int = ROWS) -> bytes:
    """Return a CSV of `rows` items; spreadsheet row `bad_row` (the header is row 1) has a bad scenario."""
    lines = [b"external_id,text,scenario,target_emotion,split\n"]
    for number in range(2, rows + 2):
        scenario = "sarcastic" if number == bad_row else SCENARIOS[number % 5]
        lines.append(
            f"BIG-{number:06d},Utterance {number}: I just love the rain.,{scenario},sad,train\n".encode()
        )
    return b"".join(lines)


def jsonl_file(bad_line: int, rows: int = ROWS) -> bytes:
    return b"".join(
        json.dumps(
            {
                "external_id": f"BIG-{number:06d}",
                "text": f"Utterance {number}.",
                "scenario": "sarcastic" if number == bad_line else "implicit",
                "target_emotion": "sad",
            }
        ).encode()
        + b"\n"
        for number in range(1, rows + 1)
    )


@pytest.mark.slow
def test_the_page_reports_row_99999_as_it_reports_row_2(client_for) -> None:
    admin = client_for("admin")
    url = reverse("annotation:import_items")
    early = import_items(csv_file(bad_row=2, rows=10), "items.csv")

    response = admin.post(url, {"file": SimpleUploadedFile("items.csv", csv_file(bad_row=99_999))})

    report = response.context["report"]
    assert [(e.row, e.field, e.message) for e in early.errors] == [(2, "scenario", BAD_SCENARIO)]
    assert [(e.row, e.field, e.message) for e in report.errors] == [(99_999, "scenario", BAD_SCENARIO)]
    assert (report.imported, report.rows_read, report.invalid_rows) == (False, ROWS, 1)
    assert "row 99999" in response.content.decode() and not Item.objects.exists()

    response = admin.post(url, {"file": SimpleUploadedFile("items.csv", csv_file())})
    assert response.context["report"].created == ROWS
    assert Item.objects.count() == ROWS


@pytest.mark.slow
def test_the_command_reports_line_99999_as_it_reports_line_2(db: None, tmp_path: Path) -> None:
    for bad_line in (2, 99_999):
        path = tmp_path / f"items-{bad_line}.jsonl"
        path.write_bytes(jsonl_file(bad_line))
        err = io.StringIO()
        with pytest.raises(CommandError, match=f"1 of {ROWS} rows have problems"):
            call_command("import_items", str(path), stdout=io.StringIO(), stderr=err)
        assert err.getvalue().strip() == f"Line {bad_line}, scenario: {BAD_SCENARIO}"
        assert not Item.objects.exists()


def test_a_large_upload_becomes_a_job_that_imports_with_progress(
    client_for, media_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(views, "SYNC_IMPORT_BYTES", 1000)  # so a small file counts as large
    admin = client_for("admin")
    response = admin.post(
        reverse("annotation:import_items"), {"file": SimpleUploadedFile("items.csv", csv_file(rows=200))}
    )
    job = Job.objects.get(kind="import_items")
    assert response.status_code == 302 and response.url == reverse("job_detail", args=[job.pk])

    run_job(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result is not None and job.result["created"] == 200
    assert Item.objects.count() == 200
    assert not list((media_root / "imports" / "items").iterdir())  # the upload is removed once imported


def test_a_refused_job_import_fails_with_its_problems_and_writes_nothing(
    client_for, media_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(views, "SYNC_IMPORT_BYTES", 1000)
    client_for("admin").post(
        reverse("annotation:import_items"),
        {"file": SimpleUploadedFile("items.csv", csv_file(bad_row=150, rows=200))},
    )
    job = Job.objects.get(kind="import_items")

    run_job(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "1 of 200 rows have problems" in job.error
    assert f"Row 150, scenario: {BAD_SCENARIO}" in job.log
    assert not Item.objects.exists()


def test_a_job_import_that_skips_bad_rows_finishes_with_errors_counted(
    client_for, media_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a large upload with one bad row, imported with "import the valid rows"
    monkeypatch.setattr(views, "SYNC_IMPORT_BYTES", 1000)
    client_for("admin").post(
        reverse("annotation:import_items"),
        {"file": SimpleUploadedFile("items.csv", csv_file(bad_row=150, rows=200)), "import_valid_rows": "on"},
    )
    job = Job.objects.get(kind="import_items")

    # when its job runs
    run_job(job.pk)

    # then the valid rows are in, and the job says one row failed, with its problem in the log
    job.refresh_from_db()
    assert job.status == JobStatus.FINISHED_WITH_ERRORS, job.error
    assert job.message == "Finished with errors: 1 of 200 rows failed (0.5%)"
    assert f"Row 150, scenario: {BAD_SCENARIO}" in job.log
    assert Item.objects.count() == 199
