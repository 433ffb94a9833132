"""Training jobs on a finished build's export: who may start one, what the form offers, what is frozen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from ml.builder.models import Build, BuildStatus
from ml.core.ablations import NO_ABLATION
from ml.jobs.builds.sources import ExportChanged, build_choice_value
from ml.jobs.datasets import snapshot_records
from ml.jobs.launch import INFERENCE_JOB, REWARD_TRAINING_JOB, RL_JOB, SFT_JOB, LaunchRefused, start_ml_job
from ml.jobs.models import DatasetSnapshot
from tests.ml.jobs.builds.support import exported_build
from tests.ml.jobs.support import tiny_sft_parameters
from webapp.models import Job, User

pytestmark = pytest.mark.usefixtures("ml_storage")
WRONG_ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "norole")


def sft_form(source: str, **extra: Any) -> dict[str, Any]:
    return {
        "start_from": "tiny",
        "source": source,
        "epochs": 1,
        "learning_rate": 1e-4,
        "batch_size": 1,
        "gradient_accumulation_steps": 1,
        "lambda_aaa": 0.1,
        "lora_rank": 4,
        "device": "cpu",
        "ablation": NO_ABLATION,
        **extra,
    }


@pytest.fixture
def build(db: None, tmp_path: Path) -> Build:
    return exported_build(tmp_path / "export")


def test_admins_are_offered_an_exported_build_for_each_training_job_but_not_for_inference(
    build: Build, client_for: Callable[[str], Client]
) -> None:
    unexported = Build.objects.create(name="still running", status=BuildStatus.RUNNING)
    admin = client_for("admin")
    for kind in (SFT_JOB, RL_JOB, REWARD_TRAINING_JOB):
        page = admin.get(reverse("ml:start_job", args=[kind])).content.decode()
        assert f'value="{build_choice_value(build)}"' in page, kind
        assert "Completed annotations" in page, kind
        assert f'value="{build_choice_value(unexported)}"' not in page, kind
    inference = admin.get(reverse("ml:start_job", args=[INFERENCE_JOB])).content.decode()
    assert build_choice_value(build) not in inference


@pytest.mark.parametrize("name", WRONG_ROLES)
def test_other_roles_can_neither_see_nor_start_a_job_on_a_build(
    build: Build, client_for: Callable[[str], Client], name: str
) -> None:
    client = client_for(name)
    page = reverse("ml:start_job", args=[SFT_JOB])
    assert client.get(page).status_code == 403
    assert client.post(page, sft_form(build_choice_value(build))).status_code == 403
    assert not Job.objects.exists() and not DatasetSnapshot.objects.exists()


def test_an_admin_starts_sft_on_a_build_without_choosing_a_split(
    build: Build, client_for: Callable[[str], Client]
) -> None:
    response = client_for("admin").post(
        reverse("ml:start_job", args=[SFT_JOB]), sft_form(build_choice_value(build))
    )
    job = Job.objects.get(kind=SFT_JOB)
    assert response.status_code == 302 and response["Location"] == reverse("ml:job", args=[job.pk])
    snapshot = DatasetSnapshot.objects.get(job=job)
    assert (snapshot.build, snapshot.splits, snapshot.purpose) == (build, [], "sft")
    assert [entry["external_id"] for entry in snapshot.entries] == ["S-1", "S-2", "S-3", "S-4"]
    assert (job.parameters["build"], job.parameters["dataset_snapshot"]) == (build.pk, snapshot.pk)
    page = client_for("admin").get(reverse("ml:job", args=[job.pk])).content.decode()
    assert f"4 exported records of build #{build.pk}" in page


def test_annotations_without_a_split_are_refused_with_a_reason(
    build: Build, client_for: Callable[[str], Client]
) -> None:
    response = client_for("admin").post(reverse("ml:start_job", args=[SFT_JOB]), sft_form("annotations"))
    assert response.status_code == 200
    assert "Choose at least one split, or a build as the data." in response.content.decode()
    assert not Job.objects.exists()


def test_a_build_that_is_not_exported_is_not_a_valid_choice(
    db: None, client_for: Callable[[str], Client]
) -> None:
    draft = Build.objects.create(name="draft")
    response = client_for("admin").post(
        reverse("ml:start_job", args=[SFT_JOB]), sft_form(build_choice_value(draft))
    )
    assert "Select a valid choice" in response.content.decode()
    assert not Job.objects.exists()
    with pytest.raises(LaunchRefused, match="no export"):
        start_ml_job(SFT_JOB, started_by=None, parameters=tiny_sft_parameters(), build=draft)
    assert not DatasetSnapshot.objects.exists()


def test_a_snapshot_reads_the_records_it_froze_and_refuses_a_rewritten_export(
    build: Build, users: dict[str, User]
) -> None:
    job = start_ml_job(SFT_JOB, started_by=users["admin"], parameters=tiny_sft_parameters(), build=build)
    snapshot = DatasetSnapshot.objects.get(job=job)
    rows = snapshot_records(snapshot)
    assert [row.record.item_id for row in rows] == ["S-1", "S-2", "S-3", "S-4"]
    assert all(row.record.target and row.audio.size for row in rows)

    records = Path(build.export_path) / "records.jsonl"
    records.write_text(records.read_text().splitlines()[0] + "\n")
    with pytest.raises(ExportChanged, match="rewritten since the job started"):
        snapshot_records(snapshot)
