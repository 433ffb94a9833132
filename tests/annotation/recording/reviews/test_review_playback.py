"""The review playback gate: a verdict only after the take played to the end, on the page and in the API.

The rule lives in `annotation.recording.access.verdict_refusal` / `playback_refusal` (over the
audio the server sent, `webapp.listening`) and is enforced by `reviews.submit_verdict`, which the
page and the API both call. "Played" means the reviewer fetched the whole take through its audio
link and the take's length has passed since.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.recording.access import MAX_REVIEW_SPEED, verdict_unlocked
from annotation.recording.models import Review, Take
from annotation.recording.reviews import (
    PlaybackRequired,
    present_reviews,
    record_playback,
    replace_reviewer,
    submit_verdict,
)
from tests.annotation.recording.support import first_review, record
from tests.factories import ItemFactory
from tests.support.listening import fetch_audio, listen
from webapp.models import AudioFetch, User
from webapp.roles import Role
from webapp.storage import read_media


@pytest.fixture
def take(users: dict[str, User], review_panel: list[User], take_wav: bytes) -> Take:
    return record(users["actor"], ItemFactory.create(actor=users["actor"]), take_wav)


def client_of(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def started_a_minute_ago(review: Review) -> None:
    """Move the reviewer's fetches of the take back a minute, as if it had been playing since."""
    fetched = AudioFetch.objects.filter(user=review.reviewer, key=review.take.audio_key)
    fetched.update(fetched_at=timezone.now() - timedelta(minutes=1))


def test_no_verdict_before_the_take_played_to_the_end(take: Take) -> None:
    review = first_review(take)
    with pytest.raises(PlaybackRequired, match="Play the whole take"):
        submit_verdict(review.pk, review.reviewer, "accept")
    assert Review.objects.get(pk=review.pk).verdict == Review.Verdict.PENDING


def test_a_playback_report_sooner_than_the_take_could_play_is_refused(take: Take) -> None:
    review = Review.objects.select_related("take", "reviewer").get(pk=first_review(take).pk)
    with pytest.raises(PlaybackRequired, match="Open the take"):
        record_playback(review)

    present_reviews([review])
    fetch_audio(client_of(review.reviewer), review.reviewer, take.audio_key)
    started = AudioFetch.objects.get(user=review.reviewer, key=take.audio_key).fetched_at
    at_top_speed = take.duration_seconds / MAX_REVIEW_SPEED
    with pytest.raises(PlaybackRequired, match="it lasts"):
        record_playback(review, now=started + timedelta(seconds=at_top_speed * 0.5))
    assert not verdict_unlocked(Review.objects.get(pk=review.pk))

    record_playback(review, now=started + timedelta(seconds=at_top_speed))
    assert Review.objects.get(pk=review.pk).played_at is not None
    # the verdict asks again, now: the take must have had its length since it was sent
    started_a_minute_ago(review)
    assert verdict_unlocked(Review.objects.select_related("take").get(pk=review.pk))
    assert submit_verdict(review.pk, review.reviewer, "accept").review.verdict == "accept"


def test_a_scripted_played_report_with_no_audio_fetched_is_refused_however_late(take: Take) -> None:
    review = Review.objects.select_related("take", "reviewer").get(pk=first_review(take).pk)
    present_reviews([review], now=timezone.now() - timedelta(hours=1))

    with pytest.raises(PlaybackRequired, match="has not sent you its audio"):
        record_playback(review)
    with pytest.raises(PlaybackRequired, match="Play the whole take before giving a verdict"):
        submit_verdict(review.pk, review.reviewer, "accept")
    assert Review.objects.get(pk=review.pk).played_at is None


def test_ranges_that_cover_the_whole_take_count_and_a_part_does_not(take: Take) -> None:
    review = Review.objects.select_related("take", "reviewer").get(pk=first_review(take).pk)
    present_reviews([review])
    client, size = client_of(review.reviewer), len(read_media(take.audio_key))
    half = size // 2

    # the browser's way: a first range, then the rest
    fetch_audio(client, review.reviewer, take.audio_key, ranges=(f"bytes=0-{half - 1}",))
    started_a_minute_ago(review)
    with pytest.raises(PlaybackRequired, match=r"only \d+% of its audio"):
        record_playback(review)

    fetch_audio(client, review.reviewer, take.audio_key, ranges=(f"bytes={half}-",))
    record_playback(review)
    assert submit_verdict(review.pk, review.reviewer, "accept").review.verdict == "accept"


def test_a_review_handed_to_another_reviewer_waits_for_their_own_listening(take: Take, make_user) -> None:
    review = Review.objects.select_related("take", "reviewer").get(pk=first_review(take).pk)
    present_reviews([review], now=timezone.now() - timedelta(minutes=1))
    listen(review.reviewer, take.audio_key)
    record_playback(review)
    newcomer = make_user(Role.REVIEWER, "newcomer")

    replace_reviewer(review, newcomer)

    handed = Review.objects.select_related("take").get(pk=review.pk)
    assert not verdict_unlocked(handed)
    with pytest.raises(PlaybackRequired, match="has not sent you its audio"):
        submit_verdict(review.pk, newcomer, "accept")
    listen(newcomer, take.audio_key)
    assert submit_verdict(review.pk, newcomer, "accept").review.verdict == "accept"


def test_showing_the_page_again_never_moves_the_time_it_was_first_shown(take: Take) -> None:
    review = first_review(take)
    client = client_of(review.reviewer)
    client.get(reverse("annotation:review_take", args=[review.public_id]))
    first_shown = Review.objects.get(pk=review.pk).presented_at
    assert first_shown is not None
    client.get(reverse("annotation:review_take", args=[review.public_id]))
    client.get(reverse("annotation:api_open_reviews"))
    assert Review.objects.get(pk=review.pk).presented_at == first_shown


def test_the_review_page_refuses_a_verdict_before_playback_and_takes_it_after(take: Take) -> None:
    review = first_review(take)
    client = client_of(review.reviewer)
    page = client.get(reverse("annotation:review_take", args=[review.public_id])).content.decode()
    assert 'data-unlocked="false"' in page and "Play the whole take once" in page

    refused = client.post(reverse("annotation:review_take", args=[review.public_id]), {"verdict": "accept"})
    assert refused.status_code == 400
    assert "Play the whole take before giving a verdict." in refused.content.decode()

    played_url = reverse("annotation:review_played", args=[review.public_id])
    scripted = client.post(played_url)  # "played", with no audio fetched
    assert scripted.status_code == 409 and scripted.json() == {
        "unlocked": False,
        "error": "Play the whole take first: the server has not sent you its audio.",
    }
    fetch_audio(client, review.reviewer, review.take.audio_key)  # through the page's own link
    too_soon = client.post(played_url)
    assert too_soon.status_code == 409 and "it lasts" in too_soon.json()["error"]
    started_a_minute_ago(review)
    assert client.post(played_url).json() == {"unlocked": True}

    saved = client.post(reverse("annotation:review_take", args=[review.public_id]), {"verdict": "accept"})
    assert saved.status_code == 302
    assert Review.objects.get(pk=review.pk).verdict == Review.Verdict.ACCEPT


def test_the_api_follows_the_same_gate(take: Take) -> None:
    review = first_review(take)
    client = client_of(review.reviewer)
    verdict_url = reverse("annotation:api_review_verdict", args=[review.public_id])
    played_url = reverse("annotation:api_review_played", args=[review.public_id])

    listed = client.get(reverse("annotation:api_open_reviews"))  # handing out the audio presents the take
    refused = client.post(verdict_url, {"verdict": "accept"}, content_type="application/json")
    assert refused.status_code == 409
    assert refused.json() == {"detail": "Play the whole take before giving a verdict.", "problems": []}
    scripted = client.post(played_url)  # a script that skips the audio
    assert scripted.status_code == 409
    assert scripted.json()["detail"] == "Play the whole take first: the server has not sent you its audio."

    # the audio link the API handed out, fetched whole, the take's length ago
    [listed_review] = [row for row in listed.json() if row["id"] == str(review.public_id)]
    audio = client.get(listed_review["audio_url"])
    body = b"".join(audio.streaming_content)  # type: ignore[attr-defined]
    assert audio.status_code == 200 and body == read_media(review.take.audio_key)
    assert client.post(played_url).status_code == 409  # the take is longer than no time at all
    started_a_minute_ago(review)
    played = client.post(played_url)
    assert played.status_code == 200 and played.json()["played_at"] is not None
    accepted = client.post(verdict_url, {"verdict": "accept"}, content_type="application/json")
    assert accepted.status_code == 200 and accepted.json()["verdict"] == "accept"


def test_nobody_else_reports_playback_of_a_review(take: Take, users: dict[str, User]) -> None:
    review, other = take.reviews.order_by("pk")[:2]
    for url in (
        reverse("annotation:review_played", args=[review.public_id]),
        reverse("annotation:api_review_played", args=[review.public_id]),
    ):
        assert client_of(other.reviewer).post(url).status_code == 404
        assert client_of(users["actor"]).post(url).status_code == 403
        assert client_of(users["annotator"]).post(url).status_code == 403
    anonymous = Client().post(reverse("annotation:review_played", args=[review.public_id]))
    assert anonymous.status_code == 302
    assert Review.objects.get(pk=review.pk).played_at is None
