"""Keep, fix and drop wait until the checker can have heard the sample's audio to the end: the
user's query and the spoken response, each sent whole by the server long enough ago (`webapp.listening`)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from ml.builder.models import BuildSample, SpotCheck
from ml.builder.pages.queue import Decision, decide, draw_spot_checks
from ml.builder.pages.rules import DecisionProblem
from tests.ml.builder.pages.spotcheck_builds import finished_build, taken
from tests.support.listening import client_of, fetch_audio
from webapp.models import AudioFetch, User
from webapp.roles import Role
from webapp.storage import read_media, save_media


@pytest.fixture
def annotator(make_user) -> User:
    return make_user(Role.ANNOTATOR)


@pytest.fixture
def check(db: None, media_root, annotator: User) -> SpotCheck:
    build = finished_build(single=1, audio=True)
    sample = BuildSample.objects.get(build=build)
    # a response file of its own (the fixture reuses the query's): the checker must hear both
    sample.response_audio_key = save_media("builder/response.wav", read_media(sample.user_audio_key))
    sample.save(update_fields=["response_audio_key"])
    return SpotCheck.objects.create(build=build, sample=sample, annotator=annotator)


def _started_a_minute_ago(annotator: User) -> None:
    AudioFetch.objects.filter(user=annotator).update(fetched_at=timezone.now() - timedelta(minutes=1))


@pytest.mark.parametrize("decision", [Decision("keep"), Decision("drop", ("query_unnatural",))])
def test_a_scripted_decision_with_no_audio_fetched_is_refused(
    check: SpotCheck, annotator: User, decision: Decision
) -> None:
    with pytest.raises(DecisionProblem, match="Play the user's audio first"):
        decide(check, annotator, decision)
    assert not SpotCheck.objects.get(pk=check.pk).is_submitted


def test_both_files_must_be_heard_and_long_enough_ago(check: SpotCheck, annotator: User) -> None:
    sample = check.sample
    client = client_of(annotator)
    fetch_audio(client, annotator, sample.user_audio_key)
    with pytest.raises(DecisionProblem, match="it lasts"):  # fetched this instant
        decide(check, annotator, Decision("keep"))
    _started_a_minute_ago(annotator)
    with pytest.raises(DecisionProblem, match="Play the spoken response first"):
        decide(check, annotator, Decision("keep"))

    # the response by Range requests that cover it, as an <audio> element fetches
    size = len(read_media(sample.response_audio_key))
    fetch_audio(client, annotator, sample.response_audio_key, ranges=("bytes=0-99", f"bytes=100-{size - 1}"))
    _started_a_minute_ago(annotator)
    assert decide(check, annotator, Decision("keep")).verdict == "keep"


def test_the_page_shows_why_a_decision_waits(db: None, media_root, annotator: User) -> None:
    build = finished_build(single=1, audio=True)
    draw_spot_checks(build, count=1)
    check = taken(annotator, build, played=False)
    client = client_of(annotator)
    url = reverse("ml:builder:spot_check", args=[check.pk])

    page = client.get(url).content.decode()
    assert 'data-testid="listen-first"' in page
    refused = client.post(url, {"verdict": "keep"})
    assert refused.status_code == 200
    assert (
        "Play the user&#x27;s audio first: the server has not sent you its audio." in refused.content.decode()
    )
    assert not SpotCheck.objects.get(pk=check.pk).is_submitted
