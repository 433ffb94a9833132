"""After login each role lands on its own work queue."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import TEST_PASSWORD

EXPECTED_HOME = {
    "actor": "annotation:actor_queue",
    "reviewer": "annotation:review_queue",
    "annotator": "annotation:annotator_queue",
    "lead": "annotation:adjudication_queue",
    "evaluator": "evaluation:evaluator_queue",
    "admin": "annotation:admin_dashboard",
}


@pytest.mark.parametrize(("role", "url_name"), sorted(EXPECTED_HOME.items()))
def test_login_lands_on_the_roles_queue(client, users, role: str, url_name: str) -> None:
    response = client.post(reverse("login"), {"username": role, "password": TEST_PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == reverse(url_name)
    assert response.status_code == 200


def test_a_user_without_role_is_told_so(client_for) -> None:
    response = client_for("norole").get(reverse("home"))
    assert response.status_code == 403
    assert b"No role yet" in response.content


def test_logout_ends_the_session(client_for) -> None:
    client = client_for("actor")
    client.post(reverse("logout"))
    assert client.get(reverse("annotation:actor_queue")).status_code == 302


def test_wrong_password_is_refused(client, users) -> None:
    response = client.post(reverse("login"), {"username": "actor", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content
