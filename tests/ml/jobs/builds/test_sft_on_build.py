"""The SFT job trains the tiny model on a finished build's exported records, as the CLI does."""

from __future__ import annotations

from pathlib import Path

import pytest

from ml.jobs.launch import SFT_JOB, start_ml_job
from ml.jobs.models import Checkpoint, DatasetSnapshot
from tests.ml.jobs.builds.support import exported_build
from tests.ml.jobs.support import finished, tiny_sft_parameters
from webapp.models import JobStatus, User

pytestmark = pytest.mark.slow


def test_the_sft_job_trains_on_a_build_export(ml_storage: Path, tmp_path: Path, make_user) -> None:
    # given a finished build exported as training records
    build = exported_build(tmp_path / "export", single=3)
    admin: User = make_user(None, "admin-x")

    # when an SFT job runs on it from the tiny demo model
    job = finished(start_ml_job(SFT_JOB, started_by=admin, parameters=tiny_sft_parameters(), build=build))

    # then it trained on the build's three records and recorded a checkpoint naming that snapshot
    assert job.status == JobStatus.SUCCEEDED, job.error
    snapshot = DatasetSnapshot.objects.get(job=job)
    checkpoint = Checkpoint.objects.get(produced_by=job)
    assert (checkpoint.kind, checkpoint.dataset_snapshot, snapshot.build) == (
        Checkpoint.Kind.SFT,
        snapshot,
        build,
    )
    assert any(f"SFT on 3 examples of snapshot #{snapshot.pk}" in line for line in job.log.splitlines())
