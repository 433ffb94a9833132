"""Hundreds of raters at once lose and double nothing: parallel duplicate submits, first arrivals
and seat claims on PostgreSQL (real row locks; SQLite serialises every write and proves nothing)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.studies.crowd.models import CrowdRater
from evaluation.studies.models import StudyAssignment, StudyRating
from tests.conftest import skip_or_fail
from tests.evaluation.studies.crowd.support import (
    arrive,
    comparison_link,
    crowd_study,
    pass_screens,
    play_slots_as_crowd,
    prolific_query,
    seat_user,
)
from tests.support.listening import fetch_audio
from webapp.models import AudioFetch

PARALLEL = 8


@pytest.fixture(autouse=True)
def _postgresql_only(transactional_db: None) -> None:
    if connection.vendor != "postgresql":
        skip_or_fail("row-lock races need PostgreSQL (the PostgreSQL pass runs them)", service_missing=False)


def _at_once(work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(PARALLEL)

    def run(n: int) -> None:
        try:
            start.wait(timeout=30)
            work(n)
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []


def test_parallel_duplicate_submits_store_exactly_one_rating(make_user, users):
    link = crowd_study(make_user, users["admin"])
    client = Client()
    rater = arrive(client, link, "racer")
    pass_screens(client, link, rater)
    user = seat_user(rater)
    client.get(reverse("evaluation:crowd_step", args=[link.token]))
    assignment = StudyAssignment.objects.next_for(link.study, user)
    assert assignment is not None
    fetch_audio(client, user, assignment.stimulus.audio_key)
    earlier = timezone.now() - timedelta(seconds=assignment.stimulus.audio_seconds + 1)
    AudioFetch.objects.filter(user=user).update(fetched_at=earlier)
    StudyAssignment.objects.filter(pk=assignment.pk).update(presented_at=earlier)
    assert (
        client.post(reverse("evaluation:crowd_played", args=[link.token, assignment.public_id])).status_code
        == 200
    )
    url = reverse("evaluation:crowd_submit", args=[link.token, assignment.public_id])
    statuses: list[int] = []

    def submit(n: int) -> None:
        tab = Client()
        tab.cookies = client.cookies
        statuses.append(tab.post(url, {"score_naturalness": 1 + n % 5}).status_code)

    _at_once(submit)
    assert statuses == [302] * PARALLEL
    assert StudyRating.objects.filter(assignment=assignment).count() == 1


def test_parallel_first_arrivals_of_one_id_make_one_rater(make_user, users):
    link = crowd_study(make_user, users["admin"])
    url = reverse("evaluation:crowd_entry", args=[link.token])

    def arrive_at_once(n: int) -> None:
        Client().get(url, prolific_query("twin"))

    _at_once(arrive_at_once)
    assert CrowdRater.objects.filter(link=link, external_id="twin").count() == 1


def test_raters_qualifying_at_once_take_different_seats(make_user, users):
    link = crowd_study(make_user, users["admin"], seats=PARALLEL - 2)
    clients = [Client() for _ in range(PARALLEL)]
    raters = [arrive(client, link, f"p{n}") for n, client in enumerate(clients)]
    step = reverse("evaluation:crowd_step", args=[link.token])
    codes: list[int] = []

    def qualify(n: int) -> None:
        pass_screens(clients[n], link, raters[n])
        codes.append(clients[n].get(step).status_code)

    _at_once(qualify)
    seats = list(CrowdRater.objects.filter(link=link, seat__isnull=False).values_list("seat_id", flat=True))
    assert len(seats) == len(set(seats)) == PARALLEL - 2
    assert sorted(codes) == [200] * (PARALLEL - 2) + [409] * 2


def test_parallel_duplicate_trial_answers_store_exactly_one_answer(make_user, users):
    link = comparison_link(make_user, users["admin"], "ccr", seats=2)
    client = Client()
    rater = arrive(client, link, "trial-racer")
    pass_screens(client, link, rater)
    assignment = play_slots_as_crowd(client, link, rater)
    url = reverse("evaluation:crowd_submit_trial", args=[link.token, assignment.public_id])
    statuses: list[int] = []

    def answer(n: int) -> None:
        tab = Client()
        tab.cookies = client.cookies
        statuses.append(tab.post(url, {"score_2": n % 7 - 3}).status_code)

    _at_once(answer)
    assert statuses == [302] * PARALLEL
    assignment.refresh_from_db()
    assert assignment.submitted_at is not None
    assert assignment.slots.exclude(score=None).count() == 1
