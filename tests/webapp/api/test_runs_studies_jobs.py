"""Judge runs, studies and EchoChat jobs through the API: start, status, cancel, results."""

from __future__ import annotations

import pytest
from django.test import Client

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from tests.evaluation.studies.support import build_world, make_study
from webapp.api.tokens import create_token
from webapp.jobs import start_job
from webapp.roles import Role

pytestmark = pytest.mark.usefixtures("media_root")


@pytest.fixture
def admin_api(users) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {create_token(users['admin'], 'tests').secret}")


def test_a_judge_run_starts_once_shows_progress_and_cancels_once(admin_api) -> None:
    system = System.objects.create(name="S")
    judge = JudgeConfig.objects.create(name="J", base_url="http://127.0.0.1:9/v1")
    body = {"system": system.pk, "judge": judge.pk}
    started = admin_api.post("/api/judge-runs/", body, content_type="application/json")
    assert started.status_code == 201
    run = started.json()
    assert (run["system"], run["judge"], run["job"]["status"], run["job"]["progress"]) == (
        "S",
        "J",
        "queued",
        0.0,
    )
    again = admin_api.post("/api/judge-runs/", body, content_type="application/json")
    assert again.status_code == 409
    assert "still queued or running" in again.json()["detail"]
    cancelled = admin_api.post(f"/api/judge-runs/{run['id']}/cancel/")
    assert cancelled.json()["job"]["status"] == "cancelled"
    assert admin_api.post(f"/api/judge-runs/{run['id']}/cancel/").status_code == 409
    assert admin_api.get(f"/api/judge-runs/{run['id']}/results/").json()["results"] == []


def test_a_run_of_a_judge_without_endpoint_is_refused_with_409(admin_api, settings) -> None:
    settings.JUDGE_BASE_URL = ""
    system = System.objects.create(name="S")
    judge = JudgeConfig.objects.create(name="J")
    refused = admin_api.post(
        "/api/judge-runs/", {"system": system.pk, "judge": judge.pk}, content_type="application/json"
    )
    assert refused.status_code == 409


def test_a_study_is_created_from_a_design_and_reports_progress_and_results(admin_api, make_user) -> None:
    world = build_world(make_user, n_systems=2, n_items=4)
    panel = [make_user(Role.EVALUATOR) for _ in range(2)]
    design = {
        "name": "API study",
        "systems": [system.pk for system in world.systems],
        "evaluators": [evaluator.pk for evaluator in panel],
        "items_per_system": 2,
        "ratings_per_output": 2,
        "training_count": 0,
        "trap_count": 0,
        "seed": 3,
    }
    created = admin_api.post("/api/studies/", design, content_type="application/json")
    assert created.status_code == 201, created.content
    study = created.json()
    assert study["progress"] == {"done": 0, "total": study["progress"]["total"], "percent": 0}
    assert study["progress"]["total"] > 0
    results = admin_api.get(f"/api/studies/{study['id']}/results/").json()
    assert results["n_ratings"] == 0 and results["systems"] == sorted(s.name for s in world.systems)


def test_a_study_design_with_problems_is_refused_and_creates_nothing(admin_api) -> None:
    refused = admin_api.post(
        "/api/studies/", {"name": "x", "systems": [999], "evaluators": []}, content_type="application/json"
    )
    assert refused.status_code == 400
    assert any(problem.startswith("systems:") for problem in refused.json()["problems"])


def test_study_results_are_those_of_the_page(admin_api, make_user, users) -> None:
    world = build_world(make_user, n_systems=2, n_items=4)
    study = make_study(world, [make_user(Role.EVALUATOR) for _ in range(2)], users["admin"])
    assert admin_api.get(f"/api/studies/{study.pk}/").json()["name"] == "Pilot study"
    assert admin_api.get(f"/api/studies/{study.pk}/results/").status_code == 200


def test_jobs_start_with_the_forms_validation(admin_api) -> None:
    unknown = admin_api.post("/api/jobs/", {"kind": "mine_bitcoin"}, content_type="application/json")
    assert unknown.status_code == 400
    bad = admin_api.post(
        "/api/jobs/", {"kind": "sft_aaa", "parameters": {"lora_rank": -3}}, content_type="application/json"
    )
    assert bad.status_code == 400
    assert any("lora_rank" in problem for problem in bad.json()["problems"])
    nothing_ready = admin_api.post("/api/jobs/", {"kind": "sft_aaa"}, content_type="application/json")
    assert nothing_ready.status_code in (400, 409)


def test_a_queued_job_is_cancelled_once_and_other_jobs_are_not_echochat_jobs(admin_api) -> None:
    job = start_job("sft_aaa", parameters={})
    assert admin_api.get(f"/api/jobs/{job.pk}/").json()["checkpoint"] is None
    assert admin_api.post(f"/api/jobs/{job.pk}/cancel/").json()["status"] == "cancelled"
    assert admin_api.post(f"/api/jobs/{job.pk}/cancel/").status_code == 409
    other = start_job("diagnostic_sleep", parameters={})
    assert admin_api.get(f"/api/jobs/{other.pk}/").status_code == 404


def test_the_study_list_counts_progress_in_one_query_however_many_studies(
    admin_api, make_user, users, django_assert_max_num_queries
) -> None:
    world = build_world(make_user, n_systems=2, n_items=4)
    panel = [make_user(Role.EVALUATOR) for _ in range(2)]
    for n in range(3):
        make_study(world, panel, users["admin"], name=f"Study {n}")
    with django_assert_max_num_queries(6):
        rows = admin_api.get("/api/studies/").json()["results"]
    assert [row["name"] for row in rows] == ["Study 2", "Study 1", "Study 0"]
    assert all(row["progress"]["done"] == 0 and row["progress"]["total"] > 0 for row in rows)


def test_a_finished_training_job_names_the_checkpoint_it_produced(admin_api) -> None:
    from ml.jobs.models import Checkpoint

    job = start_job("sft_aaa", parameters={})
    Checkpoint.objects.create(name="sft-1", kind="sft", uri="/tmp/sft-1", produced_by=job)
    listed = admin_api.get("/api/jobs/").json()["results"]
    assert [(row["id"], row["checkpoint"]["name"]) for row in listed] == [(job.pk, "sft-1")]
    assert admin_api.get(f"/api/jobs/{job.pk}/").json()["checkpoint"]["uri"] == "/tmp/sft-1"
