"""The recording dashboard and assignment table cost the same queries for little data and for more."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.recording.models import Item, Review, Take
from annotation.recording.reports import (
    assignment_table,
    item_state_counts,
    item_state_rows,
    recording_dashboard,
)
from tests.factories import ItemFactory, ReviewFactory, TakeFactory, UserFactory
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _studio(n: int) -> None:
    """n actors with a script and a take each, reviewed by n reviewers; some decided."""
    reviewers = [UserFactory.create(role=Role.REVIEWER) for _ in range(n)]
    for index in range(n):
        actor = UserFactory.create(role=Role.VOICE_ACTOR)
        status = Take.Status.ACCEPTED if index % 2 else Take.Status.IN_REVIEW
        take = TakeFactory.create(item=ItemFactory.create(actor=actor), actor=actor, status=status)
        verdict = Review.Verdict.ACCEPT if status == Take.Status.ACCEPTED else Review.Verdict.PENDING
        for reviewer in reviewers[:3]:
            ReviewFactory.create(take=take, reviewer=reviewer, verdict=verdict)


def _queries(report) -> int:
    with CaptureQueriesContext(connection) as captured:
        report()
    return len(captured)


@pytest.mark.parametrize("report", [recording_dashboard, assignment_table])
def test_the_report_is_flat_in_data_size(report) -> None:
    _studio(3)
    few = _queries(report)
    _studio(9)

    assert _queries(report) == few


def test_the_dashboard_counts_what_it_sees() -> None:
    _studio(4)

    dashboard = recording_dashboard()

    assert len(dashboard["actor_rows"]) == 4
    assert sum(row["open"] for row in dashboard["reviewer_rows"]) == 6  # two takes in review, three each
    assert dashboard["agreement"].takes == 2


def test_item_state_counts_cost_one_query_whatever_the_data_size() -> None:
    _studio(2)
    few = _queries(item_state_counts)
    _studio(8)

    assert _queries(item_state_counts) == few == 1


def test_item_state_counts_name_every_state_and_narrow_to_the_items_given() -> None:
    actor = UserFactory.create(role=Role.VOICE_ACTOR)
    ItemFactory.create(actor=actor)
    ItemFactory.create(actor=actor, state=Item.State.GOLD)
    ItemFactory.create()

    assert item_state_counts() == {
        **dict.fromkeys(Item.State.values, 0),
        "recording": 1,
        "gold": 1,
        "scripted": 1,
    }
    assert item_state_counts(Item.objects.filter(actor=actor))["scripted"] == 0
    assert item_state_rows()[0] == ("Scripted", 1)
    assert [label for label, _ in item_state_rows()] == Item.State.labels
