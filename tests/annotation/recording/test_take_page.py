"""The take page: waveform data and contours for the actor and admins; reviewers' names for admins only."""

from __future__ import annotations

import json
import re

from django.test import Client
from django.urls import reverse

from annotation.recording.models import Take
from annotation.recording.reviews import submit_verdict
from tests.annotation.recording.support import first_review, heard, record
from tests.factories import ItemFactory
from webapp.models import User


def contours_in(page: str) -> dict:
    match = re.search(r'<script id="take-contours" type="application/json">(.*?)</script>', page, re.S)
    assert match, "the page carries the contours for take_waveform.js"
    return json.loads(match.group(1))


def test_the_actor_sees_contours_measurements_and_reasons_but_no_reviewer(
    users: dict[str, User], review_panel: list[User], take_wav: bytes, client_for
) -> None:
    take = record(users["actor"], ItemFactory.create(actor=users["actor"]), take_wav)
    heard(take)
    for review in take.reviews.all():
        submit_verdict(review.pk, review.reviewer, "reject", ["wrong_intensity"], "Needs more energy")

    page = client_for("actor").get(reverse("annotation:take_detail", args=[take.public_id])).content.decode()

    contours = contours_in(page)
    assert contours["pitch"]["hz"] == take.contours["pitch"]["hz"]
    assert contours["intensity"]["db"] == take.contours["intensity"]["db"]
    assert "Intonation</dt><dd>rising</dd>" in page
    assert "Wrong intensity (3 reviewers)" in page and "Needs more energy" in page
    for review in take.reviews.select_related("reviewer"):
        assert not re.search(rf"\b{review.reviewer.username}\b", page)
    assert "take_waveform.js" in page and "wavesurfer" in page


def test_an_admin_sees_who_recorded_and_who_reviews_and_can_replace_a_reviewer(
    users: dict[str, User], review_panel: list[User], take_wav: bytes, client_for
) -> None:
    take = record(users["actor"], ItemFactory.create(actor=users["actor"]), take_wav)
    admin = client_for("admin")
    url = reverse("annotation:take_detail", args=[take.public_id])

    page = admin.get(url).content.decode()
    assert "Recorded by actor" in page
    assert all(review.reviewer.username in page for review in take.reviews.select_related("reviewer"))

    review = first_review(take)
    spare = next(
        user for user in [users["reviewer"], *review_panel] if not take.reviews.filter(reviewer=user).exists()
    )
    response = admin.post(
        reverse("annotation:take_reviewers", args=[take.public_id]),
        {"review": review.pk, "reviewer": spare.pk},
        follow=True,
    )

    assert f"The review now goes to {spare}." in response.content.decode()
    review.refresh_from_db()
    assert review.reviewer == spare


def test_a_take_short_of_reviewers_gets_one_added_by_an_admin(
    users: dict[str, User], make_user, take_wav: bytes, client_for
) -> None:
    take = record(users["actor"], ItemFactory.create(actor=users["actor"]), take_wav)  # one reviewer only
    from webapp.roles import Role

    newcomer = make_user(Role.REVIEWER, "newcomer")
    client_for("admin").post(
        reverse("annotation:take_reviewers", args=[take.public_id]), {"reviewer": newcomer.pk}
    )

    assert set(take.reviews.values_list("reviewer__username", flat=True)) == {"reviewer", "newcomer"}
    refused = client_for("admin").post(
        reverse("annotation:take_reviewers", args=[take.public_id]),
        {"reviewer": users["actor"].pk},
        follow=True,
    )
    assert "Choose a reviewer who is not the actor" in refused.content.decode()
    assert take.reviews.count() == 2


def test_a_take_still_analysing_says_so(users: dict[str, User], take_wav: bytes) -> None:
    from tests.annotation.recording.support import upload

    client = Client()
    client.force_login(users["actor"])
    created = upload(client, ItemFactory.create(actor=users["actor"]), take_wav).json()

    page = client.get(created["page_url"]).content.decode()

    assert Take.objects.get().status == Take.Status.ANALYSING
    assert "The analysis is still running." in page
