"""The study list's and evaluator queue's progress: right, and in a fixed number of queries."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluation.studies.models import Study, StudyAssignment, StudyRater, StudyStimulus
from evaluation.studies.reports import Progress, evaluator_studies, rater_progress, study_progress, study_rows
from tests.factories import ItemFactory, SystemFactory
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _study(admin: User, raters: list[User], n_stimuli: int, n_submitted: int) -> Study:
    """A study where every rater has n_stimuli assignments and has submitted the first n_submitted."""
    study = Study.objects.create(
        name=f"study {Study.objects.count()}",
        instructions="Listen.",
        dimensions=["naturalness"],
        items_per_system=1,
        seed=1,
        created_by=admin,
    )
    study.systems.set([SystemFactory.create(), SystemFactory.create()])
    stimuli = [
        StudyStimulus.objects.create(study=study, kind=StudyStimulus.Kind.RATED, item=ItemFactory.create())
        for _ in range(n_stimuli)
    ]
    for rater in raters:
        StudyRater.objects.create(study=study, evaluator=rater)
        for position, stimulus in enumerate(stimuli):
            StudyAssignment.objects.create(
                study=study,
                evaluator=rater,
                stimulus=stimulus,
                position=position,
                submitted_at=timezone.now() - timedelta(minutes=1) if position < n_submitted else None,
            )
    return study


def _count(report: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as queries:
        report()
    return len(queries)


def _list_page() -> list[tuple[str, int, int, list[str]]]:
    """What the study list shows: name, submitted, total and the systems (prefetched)."""
    return [
        (row.study.name, row.submitted, row.total, [system.name for system in row.study.systems.all()])
        for row in study_rows()
    ]


def test_the_study_list_counts_submitted_assignments(
    users: dict[str, User], make_user: Callable[..., User]
) -> None:
    _study(users["admin"], [users["evaluator"]], n_stimuli=1, n_submitted=0)
    few = _count(_list_page)
    raters = [make_user(Role.EVALUATOR) for _ in range(3)]
    _study(users["admin"], raters, n_stimuli=4, n_submitted=3)

    assert _count(_list_page) == few
    assert [(name, submitted, total) for name, submitted, total, _ in _list_page()] == [
        ("study 1", 9, 12),
        ("study 0", 0, 1),
    ]


def test_an_evaluators_queue_shows_their_own_progress_per_study(
    users: dict[str, User], make_user: Callable[..., User]
) -> None:
    rater, other = users["evaluator"], make_user(Role.EVALUATOR)
    first = _study(users["admin"], [rater], n_stimuli=2, n_submitted=1)
    few = _count(lambda: evaluator_studies(rater))
    second = _study(users["admin"], [rater, other], n_stimuli=5, n_submitted=5)
    _study(users["admin"], [other], n_stimuli=3, n_submitted=0)

    assert _count(lambda: evaluator_studies(rater)) == few
    assert [(entry.study, entry.progress) for entry in evaluator_studies(rater)] == [
        (second, Progress(5, 5)),
        (first, Progress(1, 2)),
    ]
    assert rater_progress(first, rater) == Progress(1, 2)
    assert study_progress(second) == Progress(10, 10)
