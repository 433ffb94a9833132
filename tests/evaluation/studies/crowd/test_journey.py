"""A crowd rater's journey through the pages: consent, screens, trials, code; and the refusals."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.studies.crowd.models import CrowdRater
from evaluation.studies.crowd.platforms import Platform
from evaluation.studies.models import StudyAssignment, StudyRating
from tests.evaluation.studies.crowd.support import (
    arrive,
    crowd_study,
    pass_screens,
    prolific_query,
    rate_next,
    seat_user,
    step_url,
)
from tests.evaluation.studies.support import build_world

pytestmark = pytest.mark.django_db


def test_a_prolific_rater_is_screened_rates_everything_and_gets_the_completion_code(make_user, users):
    link = crowd_study(make_user, users["admin"])
    client = Client()
    rater = arrive(client, link, "5f0a1b2c3d4e5f6a7b8c9d0e")
    assert "crowd-consent" in client.get(step_url(link)).content.decode()
    pass_screens(client, link, rater)
    user = seat_user(rater)
    total = StudyAssignment.objects.filter(evaluator=user).count()
    kinds = [rate_next(client, link, rater).stimulus.kind for _ in range(total)]
    assert kinds[0] == "training" and "trap" in kinds
    page = client.get(step_url(link)).content.decode()
    assert link.completion_code in page
    assert f"https://app.prolific.com/submissions/complete?cc={link.completion_code}" in page
    rater.refresh_from_db()
    assert rater.status() == "completed" and rater.time_on_task() is not None
    assert StudyRating.objects.filter(assignment__evaluator=user).count() == total
    assert set(rater.screenings.values_list("test", "passed")) == {("headphones", True), ("digits", True)}


def test_a_rater_failing_the_headphone_screen_gets_the_screened_out_code_and_rates_nothing(make_user, users):
    link = crowd_study(make_user, users["admin"])
    client = Client()
    rater = arrive(client, link, "failing0rater")
    pass_screens(client, link, rater, headphone_wrong=2)
    page = client.get(step_url(link)).content.decode()
    assert link.screened_out_code in page and link.completion_code not in page
    rater.refresh_from_db()
    assert rater.seat is None and rater.screened_out_at is not None
    assert not StudyRating.objects.filter(
        assignment__study=link.study, assignment__evaluator__crowd_seat__isnull=False
    ).exists()
    # Coming back through the platform's link does not give a second try.
    arrive(Client(), link, "failing0rater")
    assert CrowdRater.objects.filter(link=link, external_id="failing0rater").count() == 1


def test_one_wrong_headphone_trial_of_six_still_passes(make_user, users):
    link = crowd_study(make_user, users["admin"])
    client = Client()
    rater = arrive(client, link, "onewrong")
    pass_screens(client, link, rater, headphone_wrong=1)
    assert seat_user(rater) is not None


def test_a_rater_who_closes_the_tab_resumes_at_their_next_sample_from_the_platform_link(make_user, users):
    link = crowd_study(make_user, users["admin"])
    first_tab = Client()
    rater = arrive(first_tab, link, "resumer")
    pass_screens(first_tab, link, rater)
    done = [rate_next(first_tab, link, rater) for _ in range(2)]
    second_tab = Client()  # a new browser session, as after closing the tab
    assert arrive(second_tab, link, "resumer").pk == rater.pk
    following = rate_next(second_tab, link, rater)
    assert following.position == done[-1].position + 1
    assert CrowdRater.objects.filter(link=link).count() == 1


def test_a_completed_rater_who_comes_back_is_refused_with_their_code(make_user, users):
    link = crowd_study(make_user, users["admin"], seats=1)
    client = Client()
    rater = arrive(client, link, "finisher")
    pass_screens(client, link, rater)
    for _ in range(StudyAssignment.objects.filter(evaluator=seat_user(rater)).count()):
        rate_next(client, link, rater)
    again = Client()
    arrive(again, link, "finisher")
    page = again.get(step_url(link)).content.decode()
    assert "cannot take part in it again" in page and link.completion_code in page


def test_when_every_seat_is_taken_the_next_qualified_rater_is_told_the_study_is_full(make_user, users):
    link = crowd_study(make_user, users["admin"], seats=1)
    for pid, expected in (("first", 200), ("second", 409)):
        client = Client()
        rater = arrive(client, link, pid)
        pass_screens(client, link, rater)
        assert client.get(step_url(link)).status_code == expected


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"PROLIFIC_PID": "abc"},
        {"PROLIFIC_PID": "<script>", "STUDY_ID": "s", "SESSION_ID": "x"},
        {"PROLIFIC_PID": "a" * 300, "STUDY_ID": "s", "SESSION_ID": "x"},
    ],
)
def test_missing_or_garbled_platform_parameters_get_a_clear_page_and_admit_nobody(make_user, users, query):
    link = crowd_study(make_user, users["admin"])
    response = Client().get(reverse("evaluation:crowd_entry", args=[link.token]), query)
    assert response.status_code == 400
    assert "crowd-problem" in response.content.decode() and "Prolific" in response.content.decode()
    assert not CrowdRater.objects.filter(link=link).exists()


def test_an_mturk_preview_admits_nobody_and_an_accepted_hit_does(make_user, users):
    link = crowd_study(make_user, users["admin"], platform=Platform.MTURK)
    url = reverse("evaluation:crowd_entry", args=[link.token])
    preview = Client().get(
        url, {"workerId": "W1", "hitId": "H1", "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}
    )
    assert "Accept the HIT" in preview.content.decode()
    assert not CrowdRater.objects.exists()
    accepted = Client().get(url, {"workerId": "W1", "hitId": "H1", "assignmentId": "A1"})
    assert accepted.status_code == 302
    assert CrowdRater.objects.get().platform_session == "A1"


def test_a_generic_link_admits_only_its_own_signed_tokens(make_user, users):
    from evaluation.studies.crowd.access import personal_token

    world = build_world(make_user, n_systems=2, n_items=4, prefix="G")
    link = crowd_study(make_user, users["admin"], platform=Platform.GENERIC, world=world)
    other = crowd_study(make_user, users["admin"], platform=Platform.GENERIC, world=world)
    url = reverse("evaluation:crowd_entry", args=[link.token])
    assert Client().get(url, {"token": personal_token(link, 7)}).status_code == 302
    assert CrowdRater.objects.get(link=link).external_id == "rater-7"
    for forged in (personal_token(other, 8), personal_token(link, 9) + "x", "rater-9"):
        assert Client().get(url, {"token": forged}).status_code == 400
    assert CrowdRater.objects.filter(link=link).count() == 1


def test_requests_beyond_the_links_limit_get_a_slow_down_page(make_user, users):
    link = crowd_study(make_user, users["admin"], requests_per_minute=10)
    client = Client()
    arrive(client, link, "busy")
    codes = [client.get(step_url(link)).status_code for _ in range(12)]
    assert codes[:9] == [200] * 9 and codes[-1] == 429


def test_the_same_submission_twice_stores_one_rating_and_moves_on(make_user, users):
    link = crowd_study(make_user, users["admin"])
    client = Client()
    rater = arrive(client, link, "doubler")
    pass_screens(client, link, rater)
    assignment = rate_next(client, link, rater)
    again = client.post(
        reverse("evaluation:crowd_submit", args=[link.token, assignment.public_id]), {"score_naturalness": 1}
    )
    assert again.status_code == 302
    assert list(StudyRating.objects.filter(assignment=assignment).values_list("score", flat=True)) == [4]
    assert "already rated" not in client.get(step_url(link)).content.decode()


def test_a_session_with_no_rater_is_sent_back_to_its_invitation(make_user, users):
    link = crowd_study(make_user, users["admin"])
    response = Client().get(step_url(link))
    assert response.status_code == 403 and "Open the study from your invitation" in response.content.decode()


def test_prolific_query_names_the_three_parameters():
    assert set(prolific_query("x")) == {"PROLIFIC_PID", "STUDY_ID", "SESSION_ID"}


def test_a_crowd_rater_rates_a_dialogue_study_turn_by_turn_on_the_crowd_routes(make_user, users):
    from datetime import timedelta

    from django.utils import timezone

    from evaluation.studies.crowd.workflows import open_to_crowd
    from evaluation.studies.models import StudyTurn
    from evaluation.studies.workflows import record_turn_playback
    from tests.evaluation.studies.dialogues.support import build_dialogue_world, make_dialogue_study
    from tests.support.listening import fetch_audio
    from webapp.models import AudioFetch
    from webapp.roles import Role

    world = build_dialogue_world(make_user, n_dialogues=2, turns=2, prefix="CDLG")
    study = make_dialogue_study(world, [make_user(Role.EVALUATOR)], users["admin"])
    link = open_to_crowd(study, 1, Platform.PROLIFIC)
    client = Client()
    rater = arrive(client, link, "talker")
    pass_screens(client, link, rater)
    user = seat_user(rater)
    for _ in range(StudyAssignment.objects.filter(evaluator=user).count()):
        page = client.get(step_url(link)).content.decode()
        assignment = StudyAssignment.objects.next_for(study, user)
        assert assignment is not None
        replies = list(StudyTurn.objects.filter(stimulus=assignment.stimulus).order_by("turn"))
        assert reverse("evaluation:crowd_submit_turn", args=[link.token, assignment.public_id, 1]) in page
        for reply in replies:
            fetch_audio(client, user, reply.audio_key)
        shown = timezone.now() - timedelta(seconds=600)
        AudioFetch.objects.filter(user=user).update(fetched_at=shown)
        StudyAssignment.objects.filter(pk=assignment.pk).update(presented_at=shown)
        assignment.refresh_from_db()
        first = client.post(
            reverse("evaluation:crowd_turn_played", args=[link.token, assignment.public_id, 1])
        )
        assert first.status_code == 200, first.content
        played = timezone.now()
        for reply in replies[1:]:  # later replies end one after another, as they play in order
            played += timedelta(seconds=reply.audio_seconds + 1)
            record_turn_playback(assignment, reply.turn, now=played)
        for reply in replies:
            url = reverse("evaluation:crowd_submit_turn", args=[link.token, assignment.public_id, reply.turn])
            assert client.post(url, {f"score_{key}": 4 for key in study.dimensions}).status_code == 302
    assert link.completion_code in client.get(step_url(link)).content.decode()
    assert StudyRating.objects.filter(assignment__evaluator=user).count() == StudyTurn.objects.filter(
        stimulus__assignments__evaluator=user
    ).count() * len(study.dimensions)


def test_after_the_qualification_lapses_the_rater_takes_both_checks_again_and_continues(make_user, users):
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    link = crowd_study(make_user, users["admin"])
    client = Client()
    rater = arrive(client, link, "returner")
    pass_screens(client, link, rater)
    rated = rate_next(client, link, rater)
    lapsed = timezone.now() - timedelta(hours=settings.CROWD_QUALIFICATION_HOURS + 0.1)
    rater.screenings.update(finished_at=lapsed)
    assert "crowd-headphones" in client.get(step_url(link)).content.decode()
    pass_screens(client, link, rater)  # consent is kept; both checks again
    assert rater.screenings.filter(passed=True).count() == 4
    assert rate_next(client, link, rater).position == rated.position + 1


def test_an_admin_opens_a_study_to_prolific_from_its_page(make_user, users):
    from tests.evaluation.studies.support import make_study
    from webapp.roles import Role

    world = build_world(make_user, n_systems=2, n_items=4, prefix="OPEN")
    study = make_study(world, [make_user(Role.EVALUATOR)], users["admin"], items_per_system=4)
    admin = Client()
    admin.force_login(users["admin"])
    url = reverse("evaluation:crowd_admin", args=[study.pk])
    form = {
        "platform": "prolific",
        "seats": 4,
        "ratings_per_output": 2,
        "bonus": "0.30",
        "requests_per_minute": 120,
    }
    refused = admin.post(url, {**form, "completion_url": "javascript:alert(1)"})
    assert refused.status_code == 200 and "https://" in refused.content.decode()
    assert not study.crowd_seats.exists()
    assert admin.post(url, form).status_code == 302
    assert study.crowd_seats.count() == 4
    seats = StudyAssignment.objects.filter(study=study, evaluator__crowd_seat__isnull=False)
    assert seats.values("evaluator").distinct().count() == 4
    assert seats.filter(stimulus__kind="rated").count() == 2 * study.stimuli.filter(kind="rated").count()
    page = admin.get(url).content.decode()
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in page and study.crowd_link.completion_code in page
