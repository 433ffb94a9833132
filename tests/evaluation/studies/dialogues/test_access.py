"""Who may use each page of a dialogue study: the invited evaluator rates, admins manage, nobody else."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.studies.models import StudyAssignment
from tests.evaluation.studies.dialogues.support import build_dialogue_world, make_dialogue_study
from webapp.roles import Role

ROLES = ["actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole"]


@pytest.fixture
def urls(make_user, users):
    world = build_dialogue_world(make_user, n_systems=2, n_dialogues=2, turns=2)
    stranger = make_user(Role.EVALUATOR, "stranger")
    study = make_dialogue_study(world, [users["evaluator"]], users["admin"])
    mine = StudyAssignment.objects.filter(evaluator=users["evaluator"]).order_by("position")[0]
    return {
        "study": study,
        "stranger": stranger,
        "rate": reverse("evaluation:rate_study", args=[study.public_id]),
        "played": reverse("evaluation:turn_played", args=[mine.public_id, 1]),
        "rating": reverse("evaluation:submit_turn", args=[mine.public_id, 1]),
        "admin_get": [
            reverse("evaluation:study_list"),
            reverse("evaluation:study_results", args=[study.pk]),
            reverse("evaluation:study_results_csv", args=[study.pk]),
            reverse("evaluation:api_study_results", args=[study.pk]),
        ],
    }


def test_anonymous_users_are_sent_to_login(client, urls):
    assert client.get(urls["rate"])["Location"].startswith(reverse("login"))
    for url in (urls["played"], urls["rating"]):
        assert client.post(url)["Location"].startswith(reverse("login")), url
    for url in urls["admin_get"][:3]:
        assert client.get(url)["Location"].startswith(reverse("login")), url
    assert client.get(urls["admin_get"][3]).status_code in (401, 403)


@pytest.mark.parametrize("role", ROLES)
def test_the_conversation_is_for_the_invited_evaluator_only(client_for, urls, role):
    client = client_for(role)
    allowed = role == "evaluator"
    page = client.get(urls["rate"])
    assert page.status_code == (200 if allowed else 403)
    if allowed:
        assert 'data-testid="dialogue-rating-page"' in page.content.decode()
    assert client.post(urls["played"]).status_code == (409 if allowed else 403)  # 409: too soon to be true
    assert client.post(urls["rating"]).status_code == (302 if allowed else 403)


@pytest.mark.parametrize("role", ROLES)
def test_the_dialogue_study_figures_are_for_admins_only(client_for, urls, role):
    client = client_for(role)
    for url in urls["admin_get"]:
        assert client.get(url).status_code == (200 if role == "admin" else 403), url


def test_an_evaluator_not_invited_sees_neither_the_conversation_nor_its_turns(urls):
    client = Client()
    client.force_login(urls["stranger"])
    assert client.get(urls["rate"]).status_code == 404
    assert client.post(urls["played"]).status_code == 404
    assert client.post(urls["rating"]).status_code == 404


def test_turn_actions_refuse_get(client_for, urls):
    client = client_for("evaluator")
    assert client.get(urls["played"]).status_code == 405
    assert client.get(urls["rating"]).status_code == 405
