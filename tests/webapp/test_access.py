"""Who may open which page: anonymous users log in, wrong roles get 403, right roles get the page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.jobs import start_job
from webapp.models import User

ROLES = ["actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole"]

# url name -> roles that may open it with GET
ROLE_PAGES = {
    "annotation:actor_queue": {"actor"},
    "annotation:review_queue": {"reviewer"},
    "annotation:annotator_queue": {"annotator", "lead"},
    "annotation:adjudication_queue": {"lead"},
    "evaluation:evaluator_queue": {"evaluator"},
    "annotation:admin_dashboard": {"admin"},
    "job_list": {"admin"},
}


@pytest.mark.parametrize("url_name", sorted(ROLE_PAGES))
def test_anonymous_users_are_sent_to_login(client, url_name: str) -> None:
    response = client.get(reverse(url_name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("url_name", sorted(ROLE_PAGES))
def test_role_pages_open_only_for_their_roles(client_for, url_name: str, role: str) -> None:
    response = client_for(role).get(reverse(url_name))
    assert response.status_code == (200 if role in ROLE_PAGES[url_name] else 403)


@pytest.mark.parametrize("role", ROLES)
def test_job_pages_and_actions_are_admin_only(client_for, users: dict[str, User], role: str) -> None:
    job = start_job("diagnostic_sleep", started_by=users["admin"], parameters={"steps": 1})
    client = client_for(role)
    allowed = role == "admin"
    assert client.get(reverse("job_detail", args=[job.pk])).status_code == (200 if allowed else 403)
    cancel = client.post(reverse("job_cancel", args=[job.pk]))
    assert cancel.status_code == (302 if allowed else 403)
    start = client.post(reverse("annotation:start_demo_resynthesis"))
    assert start.status_code == (302 if allowed else 403)


def test_job_actions_need_login(client, users: dict[str, User]) -> None:
    job = start_job("diagnostic_sleep", started_by=users["admin"])
    for url in (reverse("job_detail", args=[job.pk]), reverse("job_cancel", args=[job.pk])):
        assert client.post(url).status_code == 302


@pytest.mark.parametrize("role", ROLES)
def test_django_admin_is_for_staff_only(client_for, role: str) -> None:
    response = client_for(role).get("/django-admin/")
    assert response.status_code == (200 if role == "admin" else 302)


def test_api_schema_and_docs_need_login(client, client_for) -> None:
    assert client.get(reverse("api_schema")).status_code in (401, 403)
    assert client.get(reverse("api_docs")).status_code in (401, 403)
    assert client_for("evaluator").get(reverse("api_docs")).status_code == 200


def test_password_change_needs_login(client, client_for) -> None:
    assert client.get(reverse("password_change")).status_code == 302
    assert client_for("norole").get(reverse("password_change")).status_code == 200


def test_healthz_is_public(client, db: None) -> None:
    assert client.get(reverse("healthz")).status_code in (200, 503)
