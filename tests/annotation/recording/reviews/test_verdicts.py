"""Verdicts: reasons for rejects, changing a verdict until the take is decided, and what the third verdict decides.

The playback gate (a verdict only after the take played to the end) is in test_review_playback.py.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import ReviewClosed, ReviewProblem, feedback_from, submit_verdict
from tests.annotation.recording.support import decide, first_review, heard, record
from tests.factories import ItemFactory
from webapp.models import User


@pytest.fixture
def take(users: dict[str, User], review_panel: list[User], take_wav: bytes) -> Take:
    recorded = record(users["actor"], ItemFactory.create(actor=users["actor"]), take_wav)
    heard(recorded)
    return recorded


def client_of(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_reject_needs_a_reason_and_an_accept_keeps_none(take: Take) -> None:
    first, second = take.reviews.order_by("pk")[:2]
    with pytest.raises(ReviewProblem, match=r"A reject needs at least one reason\."):
        submit_verdict(first.pk, first.reviewer, "reject", [])
    with pytest.raises(ReviewProblem, match=r"Unknown reason: bored\."):
        submit_verdict(first.pk, first.reviewer, "reject", ["bored"])

    submit_verdict(second.pk, second.reviewer, "accept", ["wrong_emotion"], "  lovely  ")

    second.refresh_from_db()
    assert (second.verdict, second.reasons, second.comment) == ("accept", [], "lovely")


def test_a_reviewer_changes_their_verdict_until_the_take_is_decided(take: Take) -> None:
    first, second, third = take.reviews.order_by("pk")
    submit_verdict(first.pk, first.reviewer, "accept")
    submit_verdict(first.pk, first.reviewer, "reject", ["other"], "changed my mind")
    first.refresh_from_db()
    assert (first.verdict, first.reasons, first.comment) == ("reject", ["other"], "changed my mind")
    submit_verdict(first.pk, first.reviewer, "accept")
    submit_verdict(second.pk, second.reviewer, "accept")

    assert submit_verdict(third.pk, third.reviewer, "accept").outcome == "accepted"

    for review in (first, third):
        with pytest.raises(ReviewClosed, match="decided; its verdicts are final"):
            submit_verdict(review.pk, review.reviewer, "reject", ["other"])
    assert list(take.reviews.values_list("verdict", flat=True)) == ["accept"] * 3


def test_three_accepts_supersede_the_items_other_waiting_takes(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    item = ItemFactory.create(actor=users["actor"])
    first = record(users["actor"], item, take_wav)
    second = record(users["actor"], item, take_wav)

    decide(second, "accept", "accept", "accept")

    first.refresh_from_db()
    item.refresh_from_db()
    assert first.status == Take.Status.SUPERSEDED
    assert (item.state, item.recording_id) == (Item.State.RECORDED, second.pk)
    review = first_review(first)
    with pytest.raises(ReviewClosed, match="decided; its verdicts are final"):
        submit_verdict(review.pk, review.reviewer, "accept")


def test_a_rejected_take_leaves_the_item_in_review_while_another_take_waits(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    item = ItemFactory.create(actor=users["actor"])
    first = record(users["actor"], item, take_wav)
    record(users["actor"], item, take_wav)

    assert decide(first, "reject", "reject", "accept")[-1] == "rejected"

    item.refresh_from_db()
    assert item.state == Item.State.IN_REVIEW


def test_the_actor_reads_reasons_and_comments_without_names(take: Take) -> None:
    reviews = list(take.reviews.order_by("pk"))
    submit_verdict(
        reviews[0].pk, reviews[0].reviewer, "reject", ["wrong_intensity", "audio_quality"], "Hum at 50 Hz"
    )
    submit_verdict(reviews[1].pk, reviews[1].reviewer, "reject", ["wrong_intensity"])
    submit_verdict(reviews[2].pk, reviews[2].reviewer, "accept", [], "Fine by me")

    feedback = feedback_from(take.reviews.all())

    assert feedback.reasons == [("Wrong intensity", 2), ("Audio quality", 1)]
    assert feedback.comments == ["Fine by me", "Hum at 50 Hz"]


def test_the_review_page_saves_the_verdict_and_moves_on(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    first = record(users["actor"], ItemFactory.create(external_id="EE-1", actor=users["actor"]), take_wav)
    second = record(users["actor"], ItemFactory.create(external_id="EE-2", actor=users["actor"]), take_wav)
    heard(first, second)
    reviewer = first_review(first).reviewer
    later = (
        second.reviews.get(reviewer=reviewer) if second.reviews.filter(reviewer=reviewer).exists() else None
    )
    client = client_of(reviewer)
    review = first.reviews.get(reviewer=reviewer)

    refused = client.post(reverse("annotation:review_take", args=[review.public_id]), {"verdict": "reject"})
    assert refused.status_code == 400
    assert "A reject needs at least one reason." in refused.content.decode()

    saved = client.post(
        reverse("annotation:review_take", args=[review.public_id]),
        {"verdict": "reject", "reasons": ["misread_script"], "comment": "skipped 'still'"},
    )

    review.refresh_from_db()
    assert (review.verdict, review.reasons, review.comment) == (
        "reject",
        ["misread_script"],
        "skipped 'still'",
    )
    expected = (
        reverse("annotation:review_take", args=[later.public_id])
        if later
        else reverse("annotation:review_queue")
    )
    assert saved.status_code == 302 and saved["Location"] == expected


def test_the_verdict_api_answers_400_and_409_with_a_detail(take: Take) -> None:
    review = first_review(take)
    client = client_of(review.reviewer)
    url = reverse("annotation:api_review_verdict", args=[review.public_id])

    assert client.post(url, {"verdict": "reject"}, content_type="application/json").json() == {
        "detail": "A reject needs at least one reason.",
        "problems": [],
    }
    assert client.post(url, {"verdict": "maybe"}, content_type="application/json").json() == {
        "detail": 'verdict: "maybe" is not a valid choice.',
        "problems": [],
    }
    accepted = client.post(url, {"verdict": "accept", "comment": "clear"}, content_type="application/json")
    assert accepted.status_code == 200
    assert (accepted.json()["verdict"], accepted.json()["comment"]) == ("accept", "clear")
    changed = client.post(url, {"verdict": "reject", "reasons": ["other"]}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["verdict"] == "reject"
    decide_others = [r for r in take.reviews.order_by("pk") if r.pk != review.pk]
    for other in decide_others:
        submit_verdict(other.pk, other.reviewer, "accept")
    again = client.post(url, {"verdict": "accept"}, content_type="application/json")
    assert again.status_code == 409
    assert again.json() == {"detail": "This take is decided; its verdicts are final.", "problems": []}
    assert Review.objects.get(pk=review.pk).verdict == "reject"
