"""What an external rater's session can open: their own study pages and assigned audio, nothing else."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.studies.models import StudyAssignment
from tests.evaluation.studies.crowd.support import arrive, crowd_study, pass_screens, seat_user, step_url
from tests.evaluation.studies.support import build_world
from webapp.storage import audio_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_raters(make_user, users):
    world = build_world(make_user, n_systems=2, n_items=4, prefix="AX")
    link = crowd_study(make_user, users["admin"], world=world)
    other_link = crowd_study(make_user, users["admin"], world=world)
    mine, theirs = Client(), Client()
    me, them = arrive(mine, link, "me"), arrive(theirs, link, "them")
    pass_screens(mine, link, me)
    pass_screens(theirs, link, them)
    return link, other_link, mine, me, them


def test_the_rater_cannot_open_another_studys_pages(two_raters):
    _, other_link, mine, _, _ = two_raters
    for name in ("evaluation:crowd_step",):
        assert mine.get(reverse(name, args=[other_link.token])).status_code == 403
    assert mine.post(reverse("evaluation:crowd_consent", args=[other_link.token])).status_code == 403
    assert mine.get(reverse("evaluation:crowd_step", args=["no-such-link"])).status_code == 404


def test_the_rater_cannot_open_or_rate_another_raters_trials(two_raters):
    link, _, mine, _, them = two_raters
    theirs = StudyAssignment.objects.next_for(link.study, seat_user(them))
    assert theirs is not None
    for name in ("evaluation:crowd_played", "evaluation:crowd_submit"):
        response = mine.post(reverse(name, args=[link.token, theirs.public_id]), {"score_naturalness": 5})
        assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.submitted_at is None and theirs.played_at is None


@pytest.mark.parametrize(
    "url",
    [
        reverse("evaluation:evaluator_queue"),
        reverse("evaluation:study_list"),
        reverse("evaluation:study_create"),
        "/manage/studies/1/",
        "/manage/studies/1/crowd/",
        "/manage/studies/1/crowd/payments.csv",
        "/api/studies/",
        reverse("annotation:admin_dashboard"),
        reverse("api_tokens"),
        "/admin/",
    ],
)
def test_the_rater_reaches_no_staff_page(two_raters, url):
    _, _, mine, _, _ = two_raters
    response = mine.get(url)
    assert response.status_code in (302, 401, 403, 404)
    if response.status_code == 302:
        assert "login" in response["Location"]


def test_the_rater_hears_only_audio_assigned_to_their_seat(two_raters):
    _, _, mine, me, them = two_raters
    my_keys = set(
        StudyAssignment.objects.filter(evaluator=seat_user(me)).values_list("stimulus__audio_key", flat=True)
    )
    their_only = (
        StudyAssignment.objects.filter(evaluator=seat_user(them))
        .exclude(stimulus__audio_key__in=my_keys)
        .values_list("stimulus__audio_key", flat=True)
    )
    unassigned = next(iter(their_only))
    # A link signed for the other rater's seat (as their pages carry) does not open for this session,
    assert mine.get(audio_url(unassigned, seat_user(them))).status_code == 404
    # nor for a logged-in evaluator's link; while the rater's own assigned audio does.
    assert mine.get(audio_url(next(iter(my_keys)), seat_user(me))).status_code == 200
    assert Client().get(audio_url(next(iter(my_keys)), seat_user(me))).status_code == 302


def test_the_rating_page_names_no_system(two_raters):
    link, _, mine, _, _ = two_raters
    page = mine.get(step_url(link)).content.decode()
    assert "SecretSystem" not in page and "rating-page" in page


def test_the_admin_page_and_payment_sheet_are_for_admins_only(two_raters, users):
    link, _, _, _, _ = two_raters
    url = reverse("evaluation:crowd_payments", args=[link.study.pk])
    for role in ("evaluator", "annotator", "lead"):
        client = Client()
        client.force_login(users[role])
        assert client.get(url).status_code == 403
        assert client.get(reverse("evaluation:crowd_admin", args=[link.study.pk])).status_code == 403
    admin = Client()
    admin.force_login(users["admin"])
    sheet = admin.get(url).content.decode().splitlines()
    assert sheet[0] == "participant_id,status,seconds_on_task,bonus"
    assert sorted(sheet[1:]) == ["me,rating,,0.00", "them,rating,,0.00"]
    page = admin.get(reverse("evaluation:crowd_admin", args=[link.study.pk])).content.decode()
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in page and "headphones 6/6 passed" in page
