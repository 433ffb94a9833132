"""GET /healthz reports database and broker reachability; only staff learn which and why."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from django.urls import reverse

from tests.conftest import skip_or_fail
from webapp.health import check_broker
from webapp.models import User
from webapp.roles import Role


def test_healthy_services_answer_200_with_details_for_staff(make_user: Callable[..., User]) -> None:
    if not check_broker()["ok"]:
        skip_or_fail("broker not reachable")
    client = Client()
    client.force_login(make_user(Role.ADMIN))
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    assert body["broker"]["ok"] is True


def test_anonymous_and_non_staff_get_only_the_status(client: Client, make_user: Callable[..., User]) -> None:
    if not check_broker()["ok"]:
        skip_or_fail("broker not reachable")
    annotator = Client()
    annotator.force_login(make_user(Role.ANNOTATOR))
    for who in (client, annotator):
        response = who.get(reverse("healthz"))
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}


def test_unreachable_broker_answers_503(client: Client, make_user: Callable[..., User], settings) -> None:
    # A real connection attempt to a port nothing listens on.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable"}

    client.force_login(make_user(Role.ADMIN))
    body = client.get(reverse("healthz")).json()
    assert body["status"] == "unavailable"
    assert body["broker"]["ok"] is False
    assert body["database"]["ok"] is True
