"""Rating a study: playback gating enforced by the server, final in-order ratings, and resuming."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.studies.models import StudyAssignment, StudyRating
from tests.evaluation.studies.support import build_world, current, make_study, play
from tests.support.listening import fetch_audio
from webapp.models import AudioFetch
from webapp.roles import Role

SCORES = {
    "score_content_helpfulness": "4",
    "score_naturalness": "3",
    "score_prosody": "5",
    "score_emotional_alignment": "2",
}


@pytest.fixture
def setup(make_user, users):
    world = build_world(make_user, n_systems=2, n_items=4)
    rater, other = users["evaluator"], make_user(Role.EVALUATOR)
    study = make_study(world, [rater, other], users["admin"], ratings_per_output=1)
    client = Client()
    client.force_login(rater)
    return study, rater, client


def _page(client, study):
    return client.get(reverse("evaluation:rate_study", args=[study.public_id]))


def _submit(client, assignment, data=SCORES):
    return client.post(reverse("evaluation:submit_assignment", args=[assignment.public_id]), data)


def _played(client, assignment):
    return client.post(reverse("evaluation:assignment_played", args=[assignment.public_id]))


def test_the_questions_stay_locked_and_a_rating_is_refused_before_playback(setup):
    study, rater, client = setup
    page = _page(client, study).content.decode()
    assert '<fieldset id="rating-controls" disabled>' in page
    assignment = current(study, rater)
    response = _submit(client, assignment)
    assert response.status_code == 302
    assert not StudyRating.objects.filter(assignment=assignment).exists()
    assert "Play the whole response before rating it." in _page(client, study).content.decode()


def test_a_playback_report_sooner_than_the_audio_lasts_is_refused(setup):
    study, rater, client = setup
    _page(client, study)
    assignment = current(study, rater)
    assignment.stimulus.audio_seconds = 30.0
    assignment.stimulus.save(update_fields=["audio_seconds"])
    response = _played(client, assignment)
    assert response.status_code == 409
    assert response.json() == {
        "unlocked": False,
        "error": "Play the whole response, from start to end, before rating.",
    }
    assert StudyAssignment.objects.get(pk=assignment.pk).played_at is None


def test_playback_reported_after_the_audio_ended_unlocks_rating(setup):
    study, rater, client = setup
    _page(client, study)
    assignment = current(study, rater)
    long_enough = timezone.now() - timedelta(seconds=assignment.stimulus.audio_seconds + 0.1)
    StudyAssignment.objects.filter(pk=assignment.pk).update(presented_at=long_enough)
    scripted = _played(client, assignment)  # "played", with no audio fetched
    assert (scripted.status_code, scripted.json()) == (
        409,
        {"unlocked": False, "error": "Play the whole response first: the server has not sent you its audio."},
    )
    fetch_audio(client, rater, assignment.stimulus.audio_key)
    AudioFetch.objects.filter(user=rater).update(fetched_at=long_enough)
    response = _played(client, assignment)
    assert (response.status_code, response.json()) == (200, {"unlocked": True})
    assert '<fieldset id="rating-controls" >' in _page(client, study).content.decode()
    assert _submit(client, assignment).status_code == 302
    stored = dict(StudyRating.objects.filter(assignment=assignment).values_list("dimension", "score"))
    assert stored == {"content_helpfulness": 4, "naturalness": 3, "prosody": 5, "emotional_alignment": 2}
    assert current(study, rater).position == 1


def test_ratings_are_final_and_given_in_order(setup):
    study, rater, client = setup
    first, second = StudyAssignment.objects.filter(study=study, evaluator=rater).order_by("position")[:2]
    play(second)
    _submit(client, second)
    assert not StudyRating.objects.filter(assignment=second).exists()
    play(first)
    _submit(client, first)
    _submit(client, first, {**SCORES, "score_naturalness": "1"})
    assert StudyRating.objects.get(assignment=first, dimension="naturalness").score == 3


@pytest.mark.parametrize(
    "data",
    [{**SCORES, "score_prosody": "6"}, {key: value for key, value in SCORES.items() if "prosody" not in key}],
)
def test_every_dimension_needs_a_score_from_1_to_5(setup, data):
    study, rater, client = setup
    assignment = current(study, rater)
    play(assignment)
    _submit(client, assignment, data)
    assert not StudyRating.objects.filter(assignment=assignment).exists()
    assert "Give every question a score from 1 to 5." in _page(client, study).content.decode()


def test_an_evaluator_stops_and_resumes_where_they_left_off(setup, users):
    study, rater, client = setup
    total = StudyAssignment.objects.filter(study=study, evaluator=rater).count()
    for _ in range(2):
        assignment = current(study, rater)
        play(assignment)
        _submit(client, assignment)
    # a new browser session, later
    later = Client()
    later.force_login(rater)
    queue = later.get(reverse("evaluation:evaluator_queue")).content.decode()
    assert f"2 of {total} rated" in queue and "Continue" in queue
    page = later.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
    assert f"Sample 3 of {total}" in page
    assert StudyRating.objects.filter(assignment__evaluator=rater).count() == 2 * len(study.dimensions)
    while (pending := StudyAssignment.objects.next_for(study, rater)) is not None:
        play(pending)
        _submit(later, pending)
    assert (
        f"You have rated all {total} samples of this study"
        in later.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
    )
    assert "Finished" in later.get(reverse("evaluation:evaluator_queue")).content.decode()
