"""The study list's and evaluator queue's progress: right, and in a fixed number of queries."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluation.studies.models import Study, StudyAssignment, StudyRater, StudyRating, StudyStimulus
from evaluation.studies.reports import (
    Progress,
    evaluator_studies,
    rater_progress,
    study_figures,
    study_progress,
    study_rating_rows,
    study_results_context,
    study_rows,
)
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


def _rated_study(admin: User, raters: list[User], n_items: int) -> Study:
    """A study of two systems on n items plus one trap, which every rater has rated in full; the first
    rater is excluded by an admin (so the seats carry a decider)."""
    study = _study(admin, [], n_stimuli=0, n_submitted=0)
    systems = list(study.systems.order_by("name"))
    stimuli = [
        StudyStimulus.objects.create(
            study=study, kind=StudyStimulus.Kind.RATED, item=ItemFactory.create(), system=system
        )
        for _ in range(n_items)
        for system in systems
    ]
    stimuli.append(
        StudyStimulus.objects.create(
            study=study,
            kind=StudyStimulus.Kind.TRAP,
            item=ItemFactory.create(),
            expected={"naturalness": [2, 2]},
        )
    )
    for number, rater in enumerate(raters):
        StudyRater.objects.create(
            study=study,
            evaluator=rater,
            decision=StudyRater.Decision.EXCLUDE if number == 0 else StudyRater.Decision.INCLUDE,
            decided_by=admin,
        )
        for position, stimulus in enumerate(stimuli):
            assignment = StudyAssignment.objects.create(
                study=study,
                evaluator=rater,
                stimulus=stimulus,
                position=position,
                submitted_at=timezone.now(),
            )
            StudyRating.objects.create(
                assignment=assignment, dimension="naturalness", score=1 + (position + number) % 5
            )
    return study


def test_a_studys_rating_rows_come_in_one_query_with_rater_system_and_item(
    users: dict[str, User], make_user: Callable[..., User]
) -> None:
    small = _rated_study(users["admin"], [users["evaluator"]], n_items=1)
    few = _count(lambda: study_rating_rows(small))
    large = _rated_study(users["admin"], [make_user(Role.EVALUATOR) for _ in range(3)], n_items=4)

    assert _count(lambda: study_rating_rows(large)) == few
    rows = study_rating_rows(small)
    assert len(rows) == 3 and {row.rater for row in rows} == {"evaluator"}
    assert sorted(row.system for row in rows) == sorted(["", *(s.name for s in small.systems.all())])
    assert {row.kind for row in rows} == {"rated", "trap"}
    assert len(study_rating_rows(large)) == 3 * (2 * 4 + 1)


def test_a_studys_figures_take_a_fixed_number_of_queries_and_fewer_once_cached(
    users: dict[str, User], make_user: Callable[..., User]
) -> None:
    small = _rated_study(users["admin"], [users["evaluator"], make_user(Role.EVALUATOR)], n_items=2)
    few = _count(lambda: study_figures(small))
    cached = _count(lambda: study_figures(small))
    large = _rated_study(users["admin"], [make_user(Role.EVALUATOR) for _ in range(4)], n_items=5)

    assert _count(lambda: study_figures(large)) == few
    assert cached < few
    screening, summary = study_figures(large)
    assert len(screening) == 4
    assert summary.n_ratings == 3 * 2 * 5  # the excluded rater's ratings and the trap left out


def test_the_results_page_context_takes_a_fixed_number_of_queries(
    users: dict[str, User], make_user: Callable[..., User]
) -> None:
    small = _rated_study(users["admin"], [users["evaluator"], make_user(Role.EVALUATOR)], n_items=2)
    few = _count(lambda: study_results_context(small))
    large = _rated_study(users["admin"], [make_user(Role.EVALUATOR) for _ in range(4)], n_items=5)

    assert _count(lambda: study_results_context(large)) == few
    context = study_results_context(large)
    assert [row["seat"].decided_by for row in context["raters"]] == [users["admin"]] * 4
    assert all(row["screens"] for row in context["raters"])
    assert [row["system"] for row in context["table"]] == list(context["summary"].systems)
    assert (context["submitted"], context["total"]) == (4 * 11, 4 * 11)


def test_two_studies_of_one_title_read_apart_in_the_queue(users: dict[str, User], client_for) -> None:
    from django.urls import reverse

    rater = users["evaluator"]
    samples = _study(users["admin"], [rater], n_stimuli=2, n_submitted=0)
    conversations = _study(users["admin"], [rater], n_stimuli=3, n_submitted=0)
    Study.objects.filter(pk=conversations.pk).update(unit=Study.Unit.DIALOGUE)

    page = client_for("evaluator").get(reverse("evaluation:evaluator_queue")).content.decode()

    assert page.count("Listening study") >= 2  # the raters' title, the same for both
    assert "· 2 samples · ref. " + str(samples.public_id)[:6] in page
    assert "· 3 conversations · ref. " + str(conversations.public_id)[:6] in page


@pytest.mark.parametrize(
    ("progress", "text", "percent"),
    [
        (Progress(0, 4), "1 of 4", 0),
        (Progress(1, 4), "2 of 4", 25),
        (Progress(4, 4), "4 of 4", 100),  # finished: never "5 of 4"
        (Progress(0, 0), "0 of 0", 100),
        # A conversation's saved turns move the progress between its submits.
        (Progress(0, 4).with_turns(0, 5), "1 of 4, turn 1 of 5", 0),
        (Progress(0, 4).with_turns(2, 5), "1 of 4, turn 3 of 5", 10),
        (Progress(1, 4).with_turns(4, 5), "2 of 4, turn 5 of 5", 45),
    ],
)
def test_progress_reads_where_the_rater_is_and_counts_saved_turns(
    progress: Progress, text: str, percent: int
) -> None:
    assert progress.text == text
    assert progress.percent == percent
