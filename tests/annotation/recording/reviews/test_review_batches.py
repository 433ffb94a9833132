"""What a reviewer is shown does not reveal upload batches: random review ids, a shuffled but stable
queue order, and the day of assignment only."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.recording.models import Review, Take
from tests.factories import ItemFactory, ReviewFactory, TakeFactory, UserFactory, tiny_wav
from webapp.models import User
from webapp.roles import Role

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


def _batch(reviewer: User, size: int = 12) -> list[Review]:
    """Takes one actor uploaded in a row, a second apart, each with an open review for `reviewer`."""
    actor = UserFactory.create(role=Role.VOICE_ACTOR)
    start = timezone.now() - timedelta(hours=1)
    reviews = []
    for n in range(size):
        take = TakeFactory.create(
            item=ItemFactory.create(external_id=f"B-{n:02d}"),
            actor=actor,
            status=Take.Status.IN_REVIEW,
            wav=tiny_wav(),
        )
        review = ReviewFactory.create(take=take, reviewer=reviewer)
        Review.objects.filter(pk=review.pk).update(
            assigned_at=start + timedelta(seconds=n, microseconds=123_457)
        )
        reviews.append(review)
    return reviews


def test_the_queue_is_not_in_upload_order_and_stays_put(users: dict[str, User], client_for) -> None:
    reviewer = users["reviewer"]
    uploaded = [review.pk for review in _batch(reviewer)]

    queued = list(Review.objects.open_for(reviewer).values_list("pk", flat=True))
    assert sorted(queued) == sorted(uploaded)
    assert queued != uploaded  # 1 chance in 12! of a shuffle matching upload order
    assert list(Review.objects.open_for(reviewer).values_list("pk", flat=True)) == queued

    page = client_for("reviewer").get(reverse("annotation:review_queue")).content.decode()
    shown = re.findall(r"B-\d\d", page)
    assert shown and shown != sorted(shown)


def test_reviewers_see_random_ids_and_days_not_row_numbers_or_times(
    users: dict[str, User], client_for
) -> None:
    reviewer = users["reviewer"]
    reviews = _batch(reviewer, size=3)
    client = client_for("reviewer")

    queue = client.get(reverse("annotation:review_queue")).content.decode()
    assert not re.search(r"/review/\d+/", queue)
    for review in reviews:
        assert f"/review/{review.public_id}/" in queue
        page = client.get(reverse("annotation:review_take", args=[review.public_id])).content.decode()
        assert page and str(review.pk) not in re.findall(r"/review/([^/\"]+)/", page)
    assert client.get(f"/review/{reviews[0].pk}/").status_code == 404

    listed = client.get(reverse("annotation:api_open_reviews")).json()
    assert {entry["id"] for entry in listed} == {str(review.public_id) for review in reviews}
    for entry in listed:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["assigned_on"])
        assert "123457" not in str(entry) and "assigned_at" not in entry


def test_another_reviewer_cannot_open_a_review_by_its_public_id(
    users: dict[str, User], client_for, make_user
) -> None:
    (review,) = _batch(users["reviewer"], size=1)
    other = make_user(Role.REVIEWER)
    from django.test import Client

    client = Client()
    client.force_login(other)
    assert client.get(reverse("annotation:review_take", args=[review.public_id])).status_code == 404
    verdict = client.post(
        reverse("annotation:api_review_verdict", args=[review.public_id]),
        {"verdict": "accept"},
        content_type="application/json",
    )
    assert verdict.status_code == 404
