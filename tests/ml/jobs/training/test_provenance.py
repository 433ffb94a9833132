"""A training job's checkpoint records what wrote it, beside its weights and on its row, and both pages show it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from django.test import Client
from django.urls import reverse

from ml.jobs.launch import SFT_JOB, start_ml_job
from ml.jobs.models import Checkpoint
from tests.ml.jobs.support import TrainingItemFactory, finished, tiny_sft_parameters
from webapp.lib.provenance import current_provenance, describe
from webapp.models import JobStatus, User


def test_an_sft_checkpoint_carries_the_provenance_of_the_job_that_trained_it(
    ml_storage: Path, make_user: Callable[..., User], client_for: Callable[[str], Client]
) -> None:
    # given one training item
    TrainingItemFactory.create(external_id="TR-0", recording__actor=make_user(None, "actor-p"))

    # when a real SFT job trains the tiny model and saves its checkpoint
    job = finished(start_ml_job(SFT_JOB, started_by=None, parameters=tiny_sft_parameters(), splits=["train"]))

    # then the job, its metadata.json and the checkpoint row name the same commit and versions
    assert job.status == JobStatus.SUCCEEDED, job.error
    checkpoint = Checkpoint.objects.get(produced_by=job)
    written = json.loads((Path(checkpoint.uri) / "metadata.json").read_text())
    assert job.provenance == current_provenance()
    assert written["provenance"] == job.provenance
    assert checkpoint.provenance == job.provenance

    # and the job page and the checkpoint page each show it once, as one line
    line = f'<dt>Ran with</dt><dd data-testid="provenance">{describe(job.provenance)}</dd>'
    admin = client_for("admin")
    job_page = admin.get(reverse("ml:job", args=[job.pk])).content.decode()
    checkpoint_page = admin.get(reverse("ml:checkpoint", args=[checkpoint.pk])).content.decode()
    assert job_page.count(line) == 1
    assert checkpoint_page.count(line) == 1
    assert "Provenance" not in checkpoint_page
