"""The recording queries written once, and the one rule for when a take counts as accepted."""

from __future__ import annotations

import pytest

from annotation.recording.access import own_takes
from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import REVIEWS_PER_TAKE, take_outcome
from tests.factories import ItemFactory, ReviewFactory, TakeFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("verdicts", "outcome"),
    [
        (["accept"] * REVIEWS_PER_TAKE, "accepted"),
        (["accept", "accept", "reject"], "rejected"),
        (["reject", "pending", "pending"], "waiting"),
        (["accept", "accept", "pending"], "waiting"),
        (["accept", "accept"], "waiting"),
    ],
)
def test_a_take_is_accepted_only_when_all_its_reviewers_accept(verdicts: list[str], outcome: str) -> None:
    assert take_outcome(verdicts) == outcome


def test_takes_by_stage() -> None:
    statuses = [Take.Status.ANALYSING, Take.Status.IN_REVIEW, Take.Status.ACCEPTED, Take.Status.REJECTED]
    analysing, in_review, accepted, rejected = (TakeFactory.create(status=status) for status in statuses)

    assert set(Take.objects.open()) == {analysing, in_review}
    assert list(Take.objects.waiting_for_review()) == [in_review]
    assert set(Take.objects.decided()) == {accepted, rejected}


def test_a_reviewers_open_reviews_are_pending_on_takes_still_in_review() -> None:
    reviewer = UserFactory.create()
    first = ReviewFactory.create(reviewer=reviewer)
    second = ReviewFactory.create(reviewer=reviewer)
    ReviewFactory.create(reviewer=reviewer, verdict=Review.Verdict.ACCEPT)
    ReviewFactory.create(reviewer=reviewer, take=TakeFactory.create(status=Take.Status.SUPERSEDED))
    ReviewFactory.create()

    # In a shuffled order (by random public id), not upload order: see test_review_batches.
    assert sorted(Review.objects.open_for(reviewer), key=lambda review: review.pk) == [first, second]
    assert Review.objects.open().count() == 3


def test_an_actor_sees_only_their_own_takes_of_an_item() -> None:
    actor = UserFactory.create()
    item = ItemFactory.create(actor=actor)
    mine = TakeFactory.create(item=item, actor=actor)
    TakeFactory.create(item=item)

    assert list(own_takes(actor, item)) == [mine]


def test_a_reviewers_done_reviews_are_those_with_a_verdict() -> None:
    reviewer = UserFactory.create()
    accepted = ReviewFactory.create(reviewer=reviewer, verdict=Review.Verdict.ACCEPT)
    rejected = ReviewFactory.create(reviewer=reviewer, verdict=Review.Verdict.REJECT)
    ReviewFactory.create(reviewer=reviewer)
    ReviewFactory.create(verdict=Review.Verdict.ACCEPT)

    assert set(Review.objects.decided_by(reviewer)) == {accepted, rejected}


def test_items_wait_for_labels_from_their_accepted_recording_until_gold() -> None:
    waiting = {
        ItemFactory.create(state=Item.State.RECORDED),
        ItemFactory.create(state=Item.State.ANNOTATING),
    }
    for state in (Item.State.SCRIPTED, Item.State.RECORDING, Item.State.IN_REVIEW, Item.State.GOLD):
        ItemFactory.create(state=state)

    assert set(Item.objects.waiting_for_labels()) == waiting
