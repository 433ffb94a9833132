"""Who may use the consent and lineage pages, and who may not."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.consent.models import ConsentRecord
from tests.factories import RecordedItemFactory
from webapp.models import User

NOT_ADMINS = ("actor", "reviewer", "annotator", "lead", "evaluator", "norole")


@pytest.fixture
def admin_pages(users: dict[str, User]) -> list[str]:
    item = RecordedItemFactory.create(recording__actor=users["actor"])
    return [
        reverse("annotation:consent_people"),
        reverse("ml:person_lineage", args=[users["actor"].pk]),
        reverse("ml:person_lineage", args=[users["actor"].pk]) + "?format=json",
        reverse("ml:item_lineage", args=[item.pk]),
    ]


def test_anonymous_visitors_log_in_first(admin_pages: list[str]) -> None:
    for url in [*admin_pages, reverse("annotation:my_consent")]:
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    withdraw = reverse("annotation:consent_withdraw_for", args=[1])
    assert Client().post(withdraw, {"reason": "x"})["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", NOT_ADMINS)
def test_only_admins_see_lineage_and_others_consent(
    admin_pages: list[str], client_for: Callable[[str], Client], users: dict[str, User], name: str
) -> None:
    client = client_for(name)
    for url in admin_pages:
        assert client.get(url).status_code == 403, url
    withdraw = reverse("annotation:consent_withdraw_for", args=[users["actor"].pk])
    assert client.post(withdraw, {"reason": "because"}).status_code == 403
    assert ConsentRecord.objects.in_force_for(users["actor"].pk) is not None


@pytest.mark.parametrize("name", [*NOT_ADMINS, "admin"])
def test_everyone_signed_in_has_their_own_consent_page(
    client_for: Callable[[str], Client], name: str
) -> None:
    page = client_for(name).get(reverse("annotation:my_consent"))
    assert page.status_code == 200
    assert 'data-testid="consent-text"' in page.content.decode()


def test_admins_see_every_page_and_withdraw_on_someones_behalf(
    admin_pages: list[str], client_for: Callable[[str], Client], users: dict[str, User]
) -> None:
    admin = client_for("admin")
    for url in admin_pages:
        assert admin.get(url).status_code == 200, url
    withdraw = reverse("annotation:consent_withdraw_for", args=[users["actor"].pk])
    assert admin.get(withdraw).status_code == 405
    refused = admin.post(withdraw, {"reason": ""})
    assert refused["Location"] == reverse("annotation:consent_people")
    assert ConsentRecord.objects.in_force_for(users["actor"].pk) is not None
    done = admin.post(withdraw, {"reason": "asked by email"})
    assert done["Location"] == reverse("ml:person_lineage", args=[users["actor"].pk])
    assert ConsentRecord.objects.in_force_for(users["actor"].pk) is None


def test_a_person_withdraws_only_their_own_consent(
    client_for: Callable[[str], Client], users: dict[str, User]
) -> None:
    # The page acts on the signed-in person only: there is no way to name someone else.
    client_for("reviewer").post(
        reverse("annotation:my_consent"), {"action": "withdraw", "person": users["actor"].pk}
    )
    assert ConsentRecord.objects.in_force_for(users["actor"].pk) is not None
    assert (
        client_for("actor").post(reverse("annotation:my_consent"), {"action": "withdraw"}).status_code == 302
    )
    assert ConsentRecord.objects.in_force_for(users["actor"].pk) is None
