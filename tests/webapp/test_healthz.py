"""GET /healthz reports database and broker reachability."""

from __future__ import annotations

from django.urls import reverse

from tests.conftest import skip_or_fail
from webapp.health import check_broker


def test_healthy_services_answer_200(client, db: None) -> None:
    if not check_broker()["ok"]:
        skip_or_fail("broker not reachable")
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    assert body["broker"]["ok"] is True


def test_unreachable_broker_answers_503(client, db: None, settings) -> None:
    # A real connection attempt to a port nothing listens on.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["broker"]["ok"] is False
    assert body["database"]["ok"] is True
