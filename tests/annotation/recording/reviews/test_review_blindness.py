"""Blind review: nothing a reviewer receives (pages, API, audio URL, audio bytes) identifies the actor,
and no reviewer sees another's verdict."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.recording.models import Review, Take
from annotation.recording.reviews import submit_verdict
from tests.annotation.audio.audio_corpus import encode
from tests.annotation.recording.support import analysed, first_review, heard, upload
from tests.factories import ItemFactory
from webapp.models import User
from webapp.roles import Role
from webapp.storage import key_for_viewer

IDENTIFYING = ("zelda", "quartermaine", "zq@voices.example")


@pytest.fixture
def blind_take(make_user, review_panel: list[User], take_wav: bytes) -> Take:
    """A take by an actor whose name is everywhere it could leak: user name, display name, e-mail,
    the file name, and the artist tag inside the uploaded MP3."""
    actor = make_user(
        Role.VOICE_ACTOR, "zelda_voice", display_name="Zelda Quartermaine", email="zq@voices.example"
    )
    tagged_mp3 = encode(take_wav, "-c:a", "libmp3lame", "-metadata", "artist=Zelda Quartermaine", "-f", "mp3")
    assert b"Zelda Quartermaine" in tagged_mp3
    client = Client()
    client.force_login(actor)
    response = upload(client, ItemFactory.create(actor=actor), tagged_mp3, "zelda_quartermaine_take3.mp3")
    assert response.status_code == 201
    take = analysed(Take.objects.get(public_id=response.json()["id"]))
    heard(take)
    return take


def reviewer_client(review: Review) -> Client:
    client = Client()
    client.force_login(review.reviewer)
    return client


def assert_anonymous(text: str, actor: User) -> None:
    lowered = text.lower()
    for word in IDENTIFYING:
        assert word not in lowered
    assert f"/{actor.pk}/" not in text and '"actor"' not in text


def stored_key(url: str, viewer: User) -> str | None:
    return key_for_viewer(url.rstrip("/").rsplit("/", 1)[-1], viewer)


def stored_keys_linked(page: str, viewer: User) -> set[str | None]:
    return {stored_key(url, viewer) for url in re.findall(r"/media/a/[^\"'\s<>]+", page)}


def test_pages_api_and_audio_say_nothing_about_the_actor(blind_take: Take) -> None:
    review = first_review(blind_take)
    client = reviewer_client(review)
    actor = blind_take.actor

    queue = client.get(reverse("annotation:review_queue")).content.decode()
    page = client.get(reverse("annotation:review_take", args=[review.public_id])).content.decode()
    listed = client.get(reverse("annotation:api_open_reviews"))
    for text in (queue, page, listed.content.decode()):
        assert_anonymous(text, actor)

    (entry,) = listed.json()
    assert set(entry) == {
        "id",
        "item",
        "audio_url",
        "duration_seconds",
        "page_url",
        "conversation_so_far",  # earlier turns of a dialogue: words, a signed take link, the reply
        "assigned_on",
        "verdict",
        "reasons",
        "comment",
        "submitted_at",
        "played_at",
    }
    assert set(entry["item"]) == {
        "external_id",
        "text",
        "scenario",
        "target_emotion",
        "emotion_variant",
        "target_intensity",
        "instructions",
        "turn",
    }
    # Links are signed with a timestamp, so the page and the API may sign the same take a second
    # apart: compare the files they name, not the link strings.
    assert stored_keys_linked(page, review.reviewer) == {stored_key(entry["audio_url"], review.reviewer)}
    assert_anonymous(entry["audio_url"], actor)

    audio = client.get(entry["audio_url"])
    body = audio.getvalue()
    assert audio.status_code == 200 and body[:4] == b"RIFF"
    assert b"Zelda" not in body and b"ID3" not in body
    assert audio["Content-Disposition"] == "inline"

    verdict = client.post(
        reverse("annotation:api_review_verdict", args=[review.public_id]),
        {"verdict": "accept"},
        content_type="application/json",
    )
    assert_anonymous(verdict.content.decode(), actor)


def test_a_reviewer_never_sees_another_reviewers_verdict(blind_take: Take) -> None:
    first, second, _ = blind_take.reviews.order_by("pk")
    submit_verdict(first.pk, first.reviewer, "reject", ["wrong_emotion"], "UNIQUE-COMMENT-91")

    client = reviewer_client(second)
    page = client.get(reverse("annotation:review_take", args=[second.public_id])).content.decode()
    listed = json.dumps(client.get(reverse("annotation:api_open_reviews")).json())

    for text in (page, listed):
        assert "UNIQUE-COMMENT-91" not in text
        assert first.reviewer.username not in text
    assert json.loads(listed)[0]["verdict"] == "pending"
