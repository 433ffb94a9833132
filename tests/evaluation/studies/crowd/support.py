"""Builders for crowd-study tests: a small ACR study opened to external raters, and a rater's
journey through the pages with the test client, answering the screens from what was played."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.studies.crowd.models import CrowdLink, CrowdRater, CrowdScreening
from evaluation.studies.crowd.platforms import Platform
from evaluation.studies.crowd.workflows import digit_triplets, headphone_trials, open_to_crowd
from evaluation.studies.models import Study, StudyAssignment
from tests.evaluation.studies.comparisons.support import make_comparison
from tests.evaluation.studies.support import StudyWorld, build_world, make_study
from tests.support.listening import fetch_audio
from webapp.models import AudioFetch, User
from webapp.roles import Role
from webapp.storage import audio_url

_STUDIES = itertools.count()


def crowd_study(
    make_user: Callable[..., User],
    admin: User,
    seats: int = 3,
    platform: Platform = Platform.PROLIFIC,
    world: StudyWorld | None = None,
    **link: object,
) -> CrowdLink:
    """Return the link of a 2-system ACR study (practice, trap) with one evaluator, opened to `seats`."""
    world = world or build_world(make_user, n_systems=2, n_items=4, prefix=f"C{next(_STUDIES)}")
    study = make_study(
        world, [make_user(Role.EVALUATOR)], admin, dimensions=["naturalness"], items_per_system=4
    )
    return open_to_crowd(study, seats, platform, bonus=Decimal("0.50"), **link)  # type: ignore[arg-type]


def prolific_query(pid: str) -> dict[str, str]:
    return {"PROLIFIC_PID": pid, "STUDY_ID": "study123", "SESSION_ID": f"session-{pid}"}


def arrive(client: Client, link: CrowdLink, pid: str) -> CrowdRater:
    """Open the Prolific link as participant `pid`; return their rater row."""
    response = client.get(reverse("evaluation:crowd_entry", args=[link.token]), prolific_query(pid))
    assert response.status_code == 302, response.status_code
    return CrowdRater.objects.get(link=link, external_id=pid)


def step_url(link: CrowdLink) -> str:
    return reverse("evaluation:crowd_step", args=[link.token])


def open_screening(rater: CrowdRater, test: str) -> CrowdScreening:
    return rater.screenings.get(test=test, finished_at__isnull=True)


def pass_screens(client: Client, link: CrowdLink, rater: CrowdRater, headphone_wrong: int = 0) -> None:
    """Consent, then answer both screens (`headphone_wrong` trials of the headphone screen wrongly)."""
    client.post(reverse("evaluation:crowd_consent", args=[link.token]), {"agree": "yes"})
    client.get(step_url(link))
    screening = open_screening(rater, "headphones")
    answers = {}
    for number, trial in enumerate(headphone_trials(screening), start=1):
        right = trial.answer
        answers[f"trial_{number}"] = str(right % 3 + 1 if number <= headphone_wrong else right)
    client.post(reverse("evaluation:crowd_screen_answer", args=[link.token, "headphones"]), answers)
    if headphone_wrong > 1:
        return
    client.get(step_url(link))
    screening = open_screening(rater, "digits")
    typed = {f"trial_{n}": " ".join(t.answer) for n, t in enumerate(digit_triplets(screening), start=1)}
    client.post(reverse("evaluation:crowd_screen_answer", args=[link.token, "digits"]), typed)
    client.get(step_url(link))  # the first page after the checks claims a seat


def seat_user(rater: CrowdRater) -> User:
    rater.refresh_from_db()
    assert rater.seat is not None, "the rater holds no seat"
    return rater.seat.user


def rate_next(client: Client, link: CrowdLink, rater: CrowdRater, score: int = 4) -> StudyAssignment:
    """Rate the rater's next sample through the pages: open it, fetch its audio, report the
    playback after the audio's length, submit."""
    user = seat_user(rater)
    page = client.get(step_url(link))
    assert page.status_code == 200
    assignment = StudyAssignment.objects.next_for(link.study, user)
    assert assignment is not None
    fetch_audio(client, user, assignment.stimulus.audio_key)  # through the crowd session, not a login
    earlier = timezone.now() - timedelta(seconds=assignment.stimulus.audio_seconds + 1)
    AudioFetch.objects.filter(user=user, key=assignment.stimulus.audio_key).update(fetched_at=earlier)
    StudyAssignment.objects.filter(pk=assignment.pk).update(presented_at=earlier)
    played = client.post(reverse("evaluation:crowd_played", args=[link.token, assignment.public_id]))
    assert played.status_code == 200, played.content
    score_for = 2 if assignment.stimulus.kind == "trap" else score
    client.post(
        reverse("evaluation:crowd_submit", args=[link.token, assignment.public_id]),
        {"score_naturalness": score_for},
    )
    return assignment


def comparison_link(make_user, admin, kind: str, seats: int = 4, **overrides: object) -> CrowdLink:
    world = build_world(make_user, n_systems=3 if kind == "mushra" else 2, n_items=4, prefix=f"CW{kind}")
    if kind == "dcr":
        overrides.setdefault("reference_system", world.systems[0])
    study = make_comparison(world, [make_user(Role.EVALUATOR)], admin, kind, training_count=1, **overrides)
    return open_to_crowd(study, seats, Platform.PROLIFIC, bonus=Decimal("0.20"), ratings_per_output=2)


def play_slots_as_crowd(client: Client, link: CrowdLink, rater: CrowdRater) -> StudyAssignment:
    """Open the rater's next trial, fetch each slot's audio from the page's links, back-date, and
    report each slot played through the crowd's route."""
    user = seat_user(rater)
    page = client.get(step_url(link))
    assert page.status_code == 200 and b'data-testid="trial-page"' in page.content
    assignment = StudyAssignment.objects.next_for(link.study, user)
    assert assignment is not None
    slots = list(assignment.slots.select_related("part__sample").order_by("position"))
    text = page.content.decode()
    for slot in slots:
        played_url = reverse("evaluation:crowd_slot_played", args=[link.token, slot.public_id])
        assert played_url in text and reverse("evaluation:slot_played", args=[slot.public_id]) not in text
        audio = client.get(audio_url(slot.part.sample.audio_key, user))
        assert audio.status_code == 200
        b"".join(audio.streaming_content)  # type: ignore[attr-defined]
    assert reverse("evaluation:crowd_submit_trial", args=[link.token, assignment.public_id]) in text
    total = sum(slot.part.sample.audio_seconds for slot in slots)
    earlier = timezone.now() - timedelta(seconds=total + 5)
    AudioFetch.objects.filter(user=user).update(fetched_at=earlier)
    StudyAssignment.objects.filter(pk=assignment.pk).update(presented_at=earlier)
    for slot in slots:
        reply = client.post(reverse("evaluation:crowd_slot_played", args=[link.token, slot.public_id]))
        assert reply.status_code == 200, reply.content
    assert reply.json()["trial_unlocked"] is True
    return assignment


def study_of(link: CrowdLink) -> Study:
    return link.study
