"""Rating a dialogue turn by turn: each turn's questions open only after its reply played to the end,
enforced by the server (the shared playback rule), and ratings are stored per turn and dimension."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from evaluation.studies.access import playback_refusal, rating_unlocked
from evaluation.studies.models import StudyAssignment, StudyRating, StudyStimulus, StudyTurn
from evaluation.studies.workflows import (
    RatingRefused,
    record_turn_playback,
    submit_rating,
    submit_turn_rating,
    turn_playbacks,
)
from tests.evaluation.studies.dialogues.support import (
    build_dialogue_world,
    make_dialogue_study,
    play_and_rate_dialogue,
    show_long_ago,
)
from tests.evaluation.studies.support import current
from webapp.lib.listening import PLAYBACK_SLACK_SECONDS
from webapp.listening import record_served

SHOWN = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
ALL_THREES = {"content_helpfulness": 3, "naturalness": 3, "prosody": 3, "emotional_alignment": 3}


def _reply(turn: int, seconds: float = 2.0, audio_key: str = "audio/stimulus/r.wav") -> StudyTurn:
    return StudyTurn(turn=turn, audio_key=audio_key, audio_seconds=seconds)


def _shown(rater=None) -> StudyAssignment:
    if rater is not None:  # the rater was sent the whole reply when the page was shown
        record_served(rater.pk, "audio/stimulus/r.wav", 0, 999, 1000, at=SHOWN)
    return StudyAssignment(stimulus=StudyStimulus(), presented_at=SHOWN, evaluator=rater)


@pytest.mark.django_db
def test_a_turn_opens_when_its_own_reply_played_not_an_earlier_one(users):
    assignment = _shown(users["evaluator"])
    played = {1: SHOWN + timedelta(seconds=2)}

    assert rating_unlocked(assignment, _reply(1), played)
    assert not rating_unlocked(assignment, _reply(2), played)
    assert rating_unlocked(assignment, _reply(2, audio_key=""), {})  # a text-only reply is open at once


@pytest.mark.django_db
def test_a_turn_counts_only_after_the_earlier_replies_and_their_length(users):
    assignment = _shown(users["evaluator"])
    first_ended = SHOWN + timedelta(seconds=10)

    assert playback_refusal(assignment, first_ended, _reply(2), {}) == (
        "Play the reply of turn 1 first: replies are heard in order."
    )
    assert playback_refusal(assignment, first_ended, _reply(4), {1: first_ended}) == (
        "Play the replies of turns 2, 3 first: replies are heard in order."
    )
    too_soon = first_ended + timedelta(seconds=2.0 - PLAYBACK_SLACK_SECONDS - 0.01)
    assert playback_refusal(assignment, too_soon, _reply(2), {1: first_ended}) is not None
    on_time = first_ended + timedelta(seconds=2.0 - PLAYBACK_SLACK_SECONDS)
    assert playback_refusal(assignment, on_time, _reply(2), {1: first_ended}) is None


@pytest.fixture
def rated(make_user, users):
    world = build_dialogue_world(make_user, n_systems=2, n_dialogues=2, turns=3)
    study = make_dialogue_study(world, [users["evaluator"]], users["admin"], items_per_system=2)
    assignment = current(study, users["evaluator"])
    show_long_ago(assignment)
    return study, assignment


def test_the_server_refuses_turn_two_before_its_reply_played_to_the_end(rated):
    _, assignment = rated
    record_turn_playback(assignment, 1, now=assignment.presented_at + timedelta(seconds=30))

    with pytest.raises(RatingRefused, match="Play the whole reply of turn 2"):
        submit_turn_rating(assignment.pk, 2, ALL_THREES)
    assert not StudyRating.objects.filter(assignment=assignment).exists()

    record_turn_playback(assignment, 2, now=assignment.presented_at + timedelta(seconds=60))
    submit_turn_rating(assignment.pk, 2, ALL_THREES)
    assert set(StudyRating.objects.filter(assignment=assignment).values_list("turn", flat=True)) == {2}


def test_a_playback_report_out_of_turn_or_too_soon_is_refused(rated):
    _, assignment = rated
    with pytest.raises(RatingRefused, match="Play the reply of turn 1 first"):
        record_turn_playback(assignment, 2)
    record_turn_playback(assignment, 1)
    with pytest.raises(RatingRefused, match="Play the whole response"):
        record_turn_playback(assignment, 2)  # turn 1 ended just now: turn 2 cannot have ended yet
    assert set(turn_playbacks(assignment)) == {1}


def test_the_dialogue_is_submitted_when_every_turn_is_rated_and_turns_are_final(rated):
    _, assignment = rated
    ended = assignment.presented_at
    for turn in (1, 2, 3):
        ended += timedelta(seconds=30)
        record_turn_playback(assignment, turn, now=ended)
    submit_turn_rating(assignment.pk, 1, ALL_THREES)
    submit_turn_rating(assignment.pk, 3, {**ALL_THREES, "prosody": 5})
    assignment.refresh_from_db()
    assert assignment.submitted_at is None

    with pytest.raises(RatingRefused, match="already rated"):
        submit_turn_rating(assignment.pk, 1, ALL_THREES)
    with pytest.raises(RatingRefused, match="every question"):
        submit_turn_rating(assignment.pk, 2, {"prosody": 3})
    with pytest.raises(RatingRefused, match="no such turn"):
        submit_turn_rating(assignment.pk, 4, ALL_THREES)
    submit_turn_rating(assignment.pk, 2, ALL_THREES)

    assignment.refresh_from_db()
    assert assignment.submitted_at is not None
    stored = StudyRating.objects.filter(assignment=assignment)
    assert stored.count() == 12  # 3 turns x 4 dimensions
    assert stored.get(turn=3, dimension="prosody").score == 5


def test_the_single_turn_submission_refuses_a_dialogue(rated):
    _, assignment = rated
    with pytest.raises(RatingRefused, match="turn by turn"):
        submit_rating(assignment.pk, ALL_THREES)


def test_over_http_turn_two_stays_locked_until_its_reply_played(rated, client_for):
    study, assignment = rated
    client = client_for("evaluator")
    page = client.get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
    # One turn at a time: turn 1's questions, locked; turn 2 asks nothing until turn 1 is rated.
    assert 'data-testid="turn-controls-1" disabled' in page and 'data-testid="turn-controls-2"' not in page

    assert client.post(reverse("evaluation:turn_played", args=[assignment.public_id, 2])).status_code == 409
    assert client.post(reverse("evaluation:turn_played", args=[assignment.public_id, 1])).status_code == 200
    scores = {f"score_{key}": "4" for key in ALL_THREES}
    refused = client.post(reverse("evaluation:submit_turn", args=[assignment.public_id, 2]), scores)
    assert refused.status_code == 302 and refused["Location"].endswith("#turn-2")
    assert not StudyRating.objects.filter(assignment=assignment, turn=2).exists()

    saved = client.post(
        reverse("evaluation:submit_turn", args=[assignment.public_id, 1]), scores, follow=True
    )
    page = saved.content.decode()
    assert 'data-testid="turn-saved-1"' in page and "Helpfulness 4" in page
    assert 'data-testid="turn-controls-2" disabled' in page
    assert set(StudyRating.objects.filter(assignment=assignment).values_list("turn", flat=True)) == {1}


def test_the_end_page_counts_conversations_not_samples(rated, users, client_for):
    study, _ = rated
    while (assignment := StudyAssignment.objects.next_for(study, users["evaluator"])) is not None:
        play_and_rate_dialogue(assignment, lambda turn, dimension: 3)

    page = client_for("evaluator").get(reverse("evaluation:rate_study", args=[study.public_id]))

    assert "You have rated all 4 conversations of this study" in page.content.decode()
    assert "samples" not in page.content.decode()


def test_a_scripted_turn_playback_with_no_reply_fetched_is_refused(make_user, users, client_for):
    world = build_dialogue_world(make_user, n_systems=1, n_dialogues=1, turns=2)
    study = make_dialogue_study(world, [users["evaluator"]], users["admin"], items_per_system=1)
    assignment = current(study, users["evaluator"])
    # shown long ago, but no reply's audio ever fetched
    StudyAssignment.objects.filter(pk=assignment.pk).update(presented_at=SHOWN)
    client = client_for("evaluator")

    scripted = client.post(reverse("evaluation:turn_played", args=[assignment.public_id, 1]))

    assert scripted.status_code == 409
    assert scripted.json()["error"] == "Play the whole response first: the server has not sent you its audio."
    assert turn_playbacks(assignment) == {}
    with pytest.raises(RatingRefused, match="Play the whole reply of turn 1"):
        submit_turn_rating(assignment.pk, 1, ALL_THREES)
