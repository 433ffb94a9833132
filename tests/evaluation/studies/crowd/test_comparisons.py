"""Comparison studies (CCR/CMOS, DCR, A/B, MUSHRA) opened to external raters: the seats' trials and
slots, the trial page on the crowd's routes, and what one seat's session may not reach of another's."""

from __future__ import annotations

from collections import Counter

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.studies.crowd.models import CrowdLink
from evaluation.studies.models import StudyAssignment, StudySlot, StudyTrialPart
from tests.evaluation.studies.crowd.support import (
    arrive,
    comparison_link,
    pass_screens,
    play_slots_as_crowd,
    seat_user,
    step_url,
)
from webapp.storage import audio_url

pytestmark = pytest.mark.django_db


def seat_assignments(link: CrowdLink) -> list[StudyAssignment]:
    return list(
        StudyAssignment.objects.filter(study=link.study, evaluator__crowd_seat__isnull=False)
        .select_related("stimulus")
        .order_by("evaluator_id", "position")
    )


@pytest.mark.parametrize("kind", ["ccr", "dcr", "ab", "mushra"])
def test_each_seat_gets_trials_with_their_slots(make_user, users, kind):
    link = comparison_link(make_user, users["admin"], kind)
    assignments = seat_assignments(link)
    assert assignments
    trials = set(StudyTrialPart.objects.filter(trial__study=link.study).values_list("trial_id", flat=True))
    # Every planned stimulus is a trial (never one of the samples it plays), each with its slots.
    assert {a.stimulus_id for a in assignments} <= trials
    rated = Counter(a.stimulus_id for a in assignments if a.stimulus.kind == "rated")
    assert set(rated.values()) == {2}  # ratings_per_output over the seats
    for assignment in assignments:
        parts = StudyTrialPart.objects.filter(trial=assignment.stimulus).count()
        slots = list(assignment.slots.order_by("position").values_list("position", "part__trial_id"))
        assert len(slots) == parts and {trial for _, trial in slots} == {assignment.stimulus_id}
        positions = [position for position, _ in slots]
        assert positions == ([0, *range(1, parts)] if kind == "mushra" else [1, 2])


@pytest.mark.parametrize("kind", ["ccr", "ab"])
def test_pairs_are_counterbalanced_over_the_seats(make_user, users, kind):
    link = comparison_link(make_user, users["admin"], kind)
    first_is_canonical: dict[int, list[bool]] = {}
    for slot in StudySlot.objects.filter(
        assignment__in=seat_assignments(link), position=1, assignment__stimulus__kind="rated"
    ).select_related("part", "assignment"):
        first_is_canonical.setdefault(slot.assignment.stimulus_id, []).append(slot.part.order == 0)
    assert first_is_canonical
    for orders in first_is_canonical.values():  # each trial heard in both orders by its two seats
        assert sorted(orders) == [False, True]


def test_dcr_always_plays_the_reference_first(make_user, users):
    link = comparison_link(make_user, users["admin"], "dcr")
    firsts = StudySlot.objects.filter(assignment__in=seat_assignments(link), position=1)
    assert {slot.part.order for slot in firsts} == {0}


def test_a_crowd_rater_answers_every_ccr_trial_once_and_gets_the_code(make_user, users):
    link = comparison_link(make_user, users["admin"], "ccr", seats=2)
    client = Client()
    rater = arrive(client, link, "cmos-pid")
    pass_screens(client, link, rater)
    while True:
        page = client.get(step_url(link))
        if b'data-testid="trial-page"' not in page.content:
            break
        assignment = play_slots_as_crowd(client, link, rater)
        submit = reverse("evaluation:crowd_submit_trial", args=[link.token, assignment.public_id])
        for _ in range(2):  # a double submit stores one answer and moves on
            response = client.post(submit, {"score_2": 2})
            assert response.status_code == 302 and response["Location"] == step_url(link)
        assignment.refresh_from_db()
        assert assignment.submitted_at is not None
        assert list(assignment.slots.exclude(score=None).values_list("position", "score")) == [(2, 2)]
    assert link.completion_code in page.content.decode()
    rater.refresh_from_db()
    assert rater.completed_at is not None
    assert not StudyAssignment.objects.filter(evaluator=seat_user(rater), submitted_at=None).exists()


def test_an_unheard_trial_is_refused_with_a_reason(make_user, users):
    link = comparison_link(make_user, users["admin"], "ab", seats=2)
    client = Client()
    rater = arrive(client, link, "hasty")
    pass_screens(client, link, rater)
    client.get(step_url(link))
    assignment = StudyAssignment.objects.next_for(link.study, seat_user(rater))
    assert assignment is not None
    slot = assignment.slots.order_by("position").first()
    assert slot is not None
    early = client.post(reverse("evaluation:crowd_slot_played", args=[link.token, slot.public_id]))
    assert early.status_code == 409 and early.json()["unlocked"] is False
    answer = reverse("evaluation:crowd_submit_trial", args=[link.token, assignment.public_id])
    page = client.post(answer, {"score_2": 1}, follow=True)
    assert "to the end before answering" in page.content.decode()
    assignment.refresh_from_db()
    assert assignment.submitted_at is None


@pytest.fixture
def two_seats(make_user, users):
    link = comparison_link(make_user, users["admin"], "ccr", seats=2)
    mine, theirs = Client(), Client()
    me, them = arrive(mine, link, "me"), arrive(theirs, link, "them")
    pass_screens(mine, link, me)
    pass_screens(theirs, link, them)
    return link, mine, me, theirs, them


def test_a_crowd_rater_cannot_play_or_answer_another_seats_trial(two_seats):
    link, mine, _, theirs, them = two_seats
    assignment = play_slots_as_crowd(theirs, link, them)
    StudySlot.objects.filter(assignment=assignment).update(played_at=None)
    for slot in assignment.slots.all():
        played = mine.post(reverse("evaluation:crowd_slot_played", args=[link.token, slot.public_id]))
        assert played.status_code == 404
    answer = mine.post(
        reverse("evaluation:crowd_submit_trial", args=[link.token, assignment.public_id]), {"score_2": 3}
    )
    assert answer.status_code == 404
    assignment.refresh_from_db()
    assert assignment.submitted_at is None
    assert not assignment.slots.exclude(played_at=None).exists()
    assert not assignment.slots.exclude(score=None).exists()
    # The evaluator's routes are not theirs either (they are not logged in).
    first = assignment.slots.first()
    assert first is not None
    assert mine.post(reverse("evaluation:slot_played", args=[first.public_id])).status_code == 302


def test_a_crowd_rater_hears_only_their_own_seats_slot_audio(two_seats):
    link, mine, me, _, them = two_seats
    my_keys = set(
        StudySlot.objects.filter(assignment__evaluator=seat_user(me)).values_list(
            "part__sample__audio_key", flat=True
        )
    )
    their_keys = set(
        StudySlot.objects.filter(assignment__evaluator=seat_user(them)).values_list(
            "part__sample__audio_key", flat=True
        )
    )
    assert my_keys and their_keys
    # Their slot audio, on the link their page carries (signed for their seat), does not open here,
    assert mine.get(audio_url(next(iter(their_keys)), seat_user(them))).status_code == 404
    # (the trial page links only this seat's slots, signed for this seat),
    page = mine.get(step_url(link)).content.decode()
    assignment = StudyAssignment.objects.next_for(link.study, seat_user(me))
    assert assignment is not None
    for slot in assignment.slots.select_related("part__sample"):
        assert slot.part.sample.audio_key in my_keys
    assert "SecretSystem" not in page
    # while the seat's own slot audio does, and no one else's session hears it.
    assert mine.get(audio_url(next(iter(my_keys)), seat_user(me))).status_code == 200
    assert Client().get(audio_url(next(iter(my_keys)), seat_user(me))).status_code == 302
