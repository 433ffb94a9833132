"""Who may open each study page: anonymous users log in, wrong roles get 403, strangers get 404."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.studies.models import StudyAssignment
from tests.evaluation.studies.support import build_world, make_study
from webapp.roles import Role

ROLES = ["actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole"]


@pytest.fixture
def study_urls(make_user, users):
    world = build_world(make_user, n_systems=2, n_items=2)
    stranger = make_user(Role.EVALUATOR, "stranger")
    study = make_study(world, [users["evaluator"]], users["admin"], training_count=0, trap_count=0)
    mine = StudyAssignment.objects.filter(evaluator=users["evaluator"]).order_by("position")[0]
    return {
        "study": study,
        "stranger": stranger,
        "evaluator_get": [reverse("evaluation:rate_study", args=[study.public_id])],
        "evaluator_post": [
            reverse("evaluation:assignment_played", args=[mine.public_id]),
            reverse("evaluation:submit_assignment", args=[mine.public_id]),
        ],
        "admin_get": [
            reverse("evaluation:study_list"),
            reverse("evaluation:study_create"),
            reverse("evaluation:study_results", args=[study.pk]),
            reverse("evaluation:study_results_csv", args=[study.pk]),
        ],
        "admin_post": [reverse("evaluation:rater_decision", args=[study.pk, users["evaluator"].pk])],
    }


def test_anonymous_users_are_sent_to_login(client, study_urls):
    for group in ("evaluator_get", "admin_get"):
        for url in study_urls[group]:
            assert client.get(url)["Location"].startswith(reverse("login")), url
    for group in ("evaluator_post", "admin_post"):
        for url in study_urls[group]:
            assert client.post(url)["Location"].startswith(reverse("login")), url


@pytest.mark.parametrize("role", ROLES)
def test_rating_pages_are_for_the_invited_evaluator_only(client_for, study_urls, role):
    client = client_for(role)
    allowed = role == "evaluator"
    for url in study_urls["evaluator_get"]:
        assert client.get(url).status_code == (200 if allowed else 403)
    played, submit = study_urls["evaluator_post"]
    assert client.post(played).status_code == (409 if allowed else 403)  # 409: not played yet
    assert client.post(submit).status_code == (302 if allowed else 403)


@pytest.mark.parametrize("role", ROLES)
def test_study_management_is_for_admins_only(client_for, study_urls, role):
    client = client_for(role)
    allowed = role == "admin"
    for url in study_urls["admin_get"]:
        assert client.get(url).status_code == (200 if allowed else 403), url
    for url in study_urls["admin_post"]:
        assert client.post(url, {"decision": "exclude"}).status_code == (302 if allowed else 403), url


def test_an_evaluator_not_invited_sees_neither_the_study_nor_others_samples(study_urls):
    client = Client()
    client.force_login(study_urls["stranger"])
    assert client.get(study_urls["evaluator_get"][0]).status_code == 404
    for url in study_urls["evaluator_post"]:
        assert client.post(url).status_code == 404


def test_rating_actions_refuse_get(client_for, study_urls):
    client = client_for("evaluator")
    for url in study_urls["evaluator_post"]:
        assert client.get(url).status_code == 405


def test_a_decision_on_someone_outside_the_study_is_not_found(client_for, study_urls):
    study = study_urls["study"]
    url = reverse("evaluation:rater_decision", args=[study.pk, study_urls["stranger"].pk])
    assert client_for("admin").post(url, {"decision": "exclude"}).status_code == 404
