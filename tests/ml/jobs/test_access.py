"""Every EchoChat page is for admins only; the start form snapshots and enqueues; the job page polls."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from ml.core.ablations import NO_ABLATION
from ml.core.config import RewardModelConfig
from ml.jobs.launch import ML_JOB_KINDS, SFT_JOB, start_ml_job
from ml.jobs.models import Checkpoint, DatasetSnapshot
from tests.ml.jobs.support import TrainingItemFactory, tiny_sft_parameters
from webapp.models import Job, User

WRONG_ROLES = ("actor", "reviewer", "annotator", "lead", "evaluator", "norole")


@pytest.fixture
def pages(db: None, users: dict[str, User]) -> list[str]:
    TrainingItemFactory.create(external_id="TR-0", recording__actor=users["actor"])
    job = start_ml_job(SFT_JOB, started_by=users["admin"], parameters=tiny_sft_parameters(), splits=["train"])
    checkpoint = Checkpoint.objects.create(
        name="sft-1", kind=Checkpoint.Kind.SFT, uri="/models/sft-1", produced_by=job
    )
    return [
        reverse("ml:training"),
        *(reverse("ml:start_job", args=[kind]) for kind in ML_JOB_KINDS),
        reverse("ml:job", args=[job.pk]),
        reverse("ml:checkpoint", args=[checkpoint.pk]),
    ]


def test_anonymous_visitors_are_sent_to_log_in(pages: list[str]) -> None:
    for url in pages:
        response = Client().get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


@pytest.mark.parametrize("name", WRONG_ROLES)
def test_other_roles_are_refused(pages: list[str], client_for: Callable[[str], Client], name: str) -> None:
    client = client_for(name)
    for url in pages:
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("ml:start_job", args=[SFT_JOB]), {}).status_code == 403


def test_admins_see_every_page(pages: list[str], client_for: Callable[[str], Client]) -> None:
    client = client_for("admin")
    for url in pages:
        assert client.get(url).status_code == 200, url


def test_the_sft_form_defaults_to_retraining_the_demo_model_on_the_train_split(
    pages: list[str], client_for: Callable[[str], Client], settings: object
) -> None:
    settings.ECHOCHAT_BASE_MODEL = ""  # type: ignore[attr-defined]
    html = client_for("admin").get(reverse("ml:start_job", args=[SFT_JOB])).content.decode()
    assert '<option value="tiny" selected>Tiny demo model' in html
    assert 'value="train" id="id_splits_2" checked' in html
    assert "Train (1 ready)" in html


def test_a_valid_start_snapshots_the_data_and_opens_the_job_page(
    pages: list[str], client_for: Callable[[str], Client], users: dict[str, User]
) -> None:
    response = client_for("admin").post(
        reverse("ml:start_job", args=[SFT_JOB]),
        {
            "splits": ["train"],
            "device": "auto",
            "start_from": "tiny",
            "epochs": 1,
            "learning_rate": 1e-5,
            "batch_size": 4,
            "gradient_accumulation_steps": 1,
            "lambda_aaa": 0.1,
            "aaa_layers": "-1, -2",
            "lora_rank": 16,
            "ablation": NO_ABLATION,
        },
    )
    job = Job.objects.filter(kind=SFT_JOB).order_by("-pk").first()
    assert job is not None
    assert response.status_code == 302
    assert response["Location"] == reverse("ml:job", args=[job.pk])
    assert (job.queue, job.started_by) == ("gpu", users["admin"])
    assert job.parameters["config"]["aaa_layers"] == [-1, -2]
    assert job.parameters["config"]["lora"] == {"rank": 16, "alpha": 32, "train_audio_encoder": True}
    assert DatasetSnapshot.objects.get(job=job).size == 1


def test_a_start_with_nothing_ready_says_why(pages: list[str], client_for: Callable[[str], Client]) -> None:
    response = client_for("admin").post(
        reverse("ml:start_job", args=["reward_training"]),
        {
            "splits": ["dev"],
            "device": "auto",
            "epochs": 2,
            "batch_size": 16,
            "learning_rate": 3e-4,
            "backbone": RewardModelConfig.backbone,
        },
    )
    assert response.status_code == 200
    assert "No item of the dev split(s) is ready for reward-model training" in response.content.decode()


def test_the_job_page_polls_charts_built_from_the_jobs_metrics(
    pages: list[str], client_for: Callable[[str], Client]
) -> None:
    job = Job.objects.get(kind=SFT_JOB)
    Job.objects.filter(pk=job.pk).update(metrics=[{"step": 1, "loss": 2.5, "rho": 0.25}])
    response = client_for("admin").get(reverse("ml:job", args=[job.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert 'hx-trigger="every 2s"' in html
    data = json.loads(html.split('id="ml-chart-data" type="application/json">')[1].split("</script>")[0])
    assert [(chart["id"], chart["series"][0]["values"]) for chart in data] == [
        ("loss", [2.5]),
        ("rho", [0.25]),
    ]


def test_other_jobs_have_no_echochat_page(pages: list[str], client_for: Callable[[str], Client]) -> None:
    other = Job.objects.create(kind="judge_run")
    assert client_for("admin").get(reverse("ml:job", args=[other.pk])).status_code == 404
