"""Who may use which recording page and endpoint: anonymous, every role, and the owner versus others."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.test import Client
from django.urls import reverse

from tests.annotation.recording.support import record
from tests.factories import ItemFactory
from webapp.models import User
from webapp.roles import Role

ROLES = ["actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole"]


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    url: str
    allowed: frozenset[str]
    ok: int
    api: bool = False


@pytest.fixture
def endpoints(users: dict[str, User], take_wav: bytes) -> list[Endpoint]:
    """Every recording page and endpoint, on objects belonging to `actor` and `reviewer`."""
    item = ItemFactory.create(actor=users["actor"])
    take = record(users["actor"], item, take_wav)  # its only reviewer is users["reviewer"]
    review = take.reviews.get()
    take_url = reverse("annotation:take_detail", args=[take.public_id])

    def page(name: str, url: str, *roles: str, method: str = "get", ok: int = 200) -> Endpoint:
        return Endpoint(name, method, url, frozenset(roles), ok)

    def api(name: str, url: str, *roles: str, method: str = "get", ok: int = 200) -> Endpoint:
        return Endpoint(name, method, url, frozenset(roles), ok, api=True)

    return [
        page("actor queue", reverse("annotation:actor_queue"), "actor"),
        page("record page", reverse("annotation:record_item", args=[item.external_id]), "actor"),
        page("take page", take_url, "actor", "admin"),
        page(
            "reviewer override",
            reverse("annotation:take_reviewers", args=[take.public_id]),
            "admin",
            method="post",
            ok=302,
        ),
        page(
            "analyse again",
            reverse("annotation:take_reanalyse", args=[take.public_id]),
            "admin",
            method="post",
            ok=302,
        ),
        page("review queue", reverse("annotation:review_queue"), "reviewer"),
        page("review page", reverse("annotation:review_take", args=[review.public_id]), "reviewer"),
        page("import items", reverse("annotation:import_items"), "admin"),
        page("assign items", reverse("annotation:assign_items"), "admin"),
        page("recording dashboard", reverse("annotation:recording_dashboard"), "admin"),
        api("list my takes", reverse("annotation:api_item_takes", args=[item.external_id]), "actor"),
        api(
            "upload a take",
            reverse("annotation:api_item_takes", args=[item.external_id]),
            "actor",
            method="post",
            ok=400,
        ),
        api("open reviews", reverse("annotation:api_open_reviews"), "reviewer"),
        api(
            "verdict",
            reverse("annotation:api_review_verdict", args=[review.public_id]),
            "reviewer",
            method="post",
            ok=400,
        ),
    ]


def call(client: Client, endpoint: Endpoint) -> int:
    if endpoint.method == "post":
        return client.post(endpoint.url, {}).status_code
    return client.get(endpoint.url).status_code


def test_anonymous_visitors_log_in_first(client, endpoints: list[Endpoint]) -> None:
    for endpoint in endpoints:
        status = call(client, endpoint)
        assert status == (403 if endpoint.api else 302), endpoint.name


@pytest.mark.parametrize("role", ROLES)
def test_each_role_reaches_only_its_own_pages(role: str, client_for, endpoints: list[Endpoint]) -> None:
    client = client_for(role)
    for endpoint in endpoints:
        expected = endpoint.ok if role in endpoint.allowed else 403
        assert call(client, endpoint) == expected, f"{endpoint.name} as {role}"


def test_other_actors_and_reviewers_get_404(make_user, endpoints: list[Endpoint]) -> None:
    other_actor = Client()
    other_actor.force_login(make_user(Role.VOICE_ACTOR, "other_actor"))
    other_reviewer = Client()
    other_reviewer.force_login(make_user(Role.REVIEWER, "other_reviewer"))
    owned = {
        "record page": other_actor,
        "take page": other_actor,
        "list my takes": other_actor,
        "upload a take": other_actor,
        "review page": other_reviewer,
        "verdict": other_reviewer,
    }
    for endpoint in endpoints:
        if endpoint.name in owned:
            assert call(owned[endpoint.name], endpoint) == 404, endpoint.name


def test_admin_actions_are_post_only(client_for, endpoints: list[Endpoint]) -> None:
    admin = client_for("admin")
    for endpoint in endpoints:
        if endpoint.method == "post" and not endpoint.api:
            assert admin.get(endpoint.url).status_code == 405, endpoint.name
