"""A job records what its attempt ran with (the project commit, torch, transformers, peft) and its page shows it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import torch
from django.test import Client
from django.urls import reverse

from ml.jobs.launch import SFT_JOB
from webapp.api.tokens import create_token
from webapp.jobs import run_job
from webapp.lib.provenance import PROJECT_ROOT, current_provenance
from webapp.models import Job, JobStatus, User


def _checked_out_commit() -> str:
    return subprocess.run(
        ["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_a_job_records_the_commit_and_library_versions_it_ran_with(db: None) -> None:
    # given a queued job, which has run nothing yet
    job = Job.objects.create(kind="diagnostic_sleep", parameters={"steps": 1, "delay_s": 0})
    assert job.provenance == {}

    # when a worker runs it
    run_job(job.pk)

    # then it names the checked-out commit and the torch that ran (as torch itself reports it)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.provenance == current_provenance()
    assert job.provenance["commit"] == _checked_out_commit()
    assert job.provenance["torch"] == torch.__version__
    assert set(job.provenance) == {"commit", "torch", "transformers", "peft"}


def test_the_job_page_shows_what_it_ran_with(client_for: Callable[[str], Client]) -> None:
    job = Job.objects.create(kind="diagnostic_sleep", parameters={"steps": 1, "delay_s": 0})
    run_job(job.pk)
    provenance = Job.objects.get(pk=job.pk).provenance

    html = client_for("admin").get(reverse("job_detail", args=[job.pk])).content.decode()

    assert (
        f'<dt>Ran with</dt><dd data-testid="provenance">commit {provenance["commit"]}, '
        f"torch {provenance['torch']}, transformers {provenance['transformers']}, peft {provenance['peft']}</dd>"
    ) in html


def test_a_job_that_never_started_shows_no_provenance(client_for: Callable[[str], Client]) -> None:
    job = Job.objects.create(kind="diagnostic_sleep")

    html = client_for("admin").get(reverse("job_detail", args=[job.pk])).content.decode()

    assert "Ran with" not in html


def test_the_api_gives_the_provenance_of_a_job_even_one_that_failed(users: dict[str, User]) -> None:
    # given an EchoChat job that fails at once (no data to train on): its attempt still ran
    job = Job.objects.create(kind=SFT_JOB, queue="gpu")
    run_job(job.pk)
    assert Job.objects.get(pk=job.pk).status == JobStatus.FAILED

    api = Client(HTTP_AUTHORIZATION=f"Token {create_token(users['admin'], 'tests').secret}")
    body = api.get(f"/api/jobs/{job.pk}/").json()

    assert body["provenance"] == current_provenance()
