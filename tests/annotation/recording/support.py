"""Steps of the recording tests: uploads through the API, the analysis job, verdicts (items: tests.factories)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import present_reviews, record_playback, submit_verdict
from tests.support.listening import listen
from webapp.jobs import run_job
from webapp.models import User


def upload(client: Client, item: Item, data: bytes, filename: str = "take.wav") -> Any:
    """POST a take to the upload API as the browser does (multipart field `audio`)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(
        reverse("annotation:api_item_takes", args=[item.external_id]),
        {"audio": SimpleUploadedFile(filename, data)},
    )


def analysed(take: Take) -> Take:
    """Run the take's analysis job here, in this process, and return the take as it is now."""
    assert take.analysis_job_id is not None
    run_job(take.analysis_job_id)
    take.refresh_from_db()
    return take


def record(actor: User, item: Item, wav: bytes) -> Take:
    """Upload through the real API as the actor, run the analysis, return the take in review."""
    client = Client()
    client.force_login(actor)
    response = upload(client, item, wav)
    assert response.status_code == 201, response.content
    return analysed(Take.objects.get(public_id=response.json()["id"]))


def heard(*takes: Take) -> None:
    """Let every reviewer of these takes have played them to the end, through the real playback
    gate: shown and fetched whole through the audio link a while ago, then reported played."""
    for take in takes:
        reviews = list(take.reviews.select_related("take", "reviewer"))
        present_reviews(reviews, now=timezone.now() - timedelta(minutes=1))
        for review in reviews:
            listen(review.reviewer, take.audio_key)
            record_playback(review)


def decide(take: Take, *verdicts: str, reasons: tuple[str, ...] = ("wrong_emotion",)) -> list[str]:
    """Give the take's reviewers these verdicts in order (after playing it); return the outcomes."""
    heard(take)
    outcomes: list[str] = []
    for review, verdict in zip(take.reviews.order_by("pk"), verdicts, strict=False):
        result = submit_verdict(review.pk, review.reviewer, verdict, reasons if verdict == "reject" else ())
        outcomes.append(result.outcome)
    return outcomes


def first_review(take: Take) -> Review:
    """Return the take's earliest assigned review."""
    return take.reviews.order_by("pk")[0]
