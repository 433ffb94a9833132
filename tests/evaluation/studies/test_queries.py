"""The study queries that mean one thing: a rater's next stimulus and what they left unrated before one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.utils import timezone

from evaluation.studies.models import Study, StudyAssignment, StudyStimulus
from tests.factories import ItemFactory
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _assignments(study: Study, rater: User, submitted: set[int], n: int = 4) -> list[StudyAssignment]:
    return [
        StudyAssignment.objects.create(
            study=study,
            evaluator=rater,
            stimulus=StudyStimulus.objects.create(
                study=study, kind=StudyStimulus.Kind.RATED, item=ItemFactory.create()
            ),
            position=position,
            submitted_at=timezone.now() if position in submitted else None,
        )
        for position in range(n)
    ]


def test_unrated_before_is_the_raters_own_open_assignments_earlier_in_their_order(
    users: dict[str, User], make_user: Callable[..., User]
) -> None:
    study = Study.objects.create(
        name="s",
        instructions="Listen.",
        dimensions=["naturalness"],
        items_per_system=1,
        seed=1,
        created_by=users["admin"],
    )
    rater, other = users["evaluator"], make_user(Role.EVALUATOR)
    mine = _assignments(study, rater, submitted={0, 2})
    theirs = _assignments(study, other, submitted=set())

    assert list(StudyAssignment.objects.unrated_before(mine[3])) == [mine[1]]
    assert not StudyAssignment.objects.unrated_before(mine[1]).exists()
    assert list(StudyAssignment.objects.unrated_before(theirs[2])) == theirs[:2]
    assert StudyAssignment.objects.next_for(study, rater) == mine[1]
