"""The conversation so far on the recorder and review pages: playable, blind, reply voiced once."""

from __future__ import annotations

import re

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse

from annotation.recording.conversation.history import conversation_so_far
from annotation.recording.conversation.replies import reply_audio_key
from annotation.recording.models import Item, Review
from tests.annotation.recording.support import decide, first_review, heard, record
from tests.factories import DialogueFactory
from webapp.models import User
from webapp.storage import key_for_viewer


def audio_sources(page: str, testid: str) -> list[str]:
    return re.findall(rf'<audio[^>]*src="([^"]+)"[^>]*data-testid="{testid}"', page)


def fetched(client: Client, url: str) -> bytes:
    response = client.get(url)
    assert response.status_code == 200
    return response.getvalue()


def three_turns(actor: User, take_wav: bytes) -> list[Item]:
    dialogue = DialogueFactory.create(external_id="ED-7", turns=3, turns__actor=actor)
    turns = list(dialogue.turns.order_by("turn"))
    for earlier in turns[:2]:
        record(actor, earlier, take_wav)
    return turns


def test_turn_three_plays_turns_one_and_two_and_their_replies(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes, client_for
) -> None:
    turns = three_turns(users["actor"], take_wav)
    actor = client_for("actor")

    page = actor.get(reverse("annotation:record_item", args=[turns[2].external_id])).content.decode()

    takes, replies = audio_sources(page, "history-take"), audio_sources(page, "history-reply")
    assert len(takes) == len(replies) == 2
    assert fetched(actor, takes[0]) == (media_root / turns[0].takes.get().audio_key).read_bytes()
    assert fetched(actor, replies[1])[:4] == b"RIFF"
    assert turns[0].reference_reply in page and turns[1].text in page
    assert 'id="recorder"' in page


def test_a_reply_is_voiced_once_whoever_plays_it(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes
) -> None:
    turns = three_turns(users["actor"], take_wav)
    key = reply_audio_key(turns[0].reference_reply)

    conversation_so_far(turns[2], users["actor"], own_takes_only=True)
    made = (media_root / key).stat().st_mtime_ns
    conversation_so_far(turns[2], users["admin"], own_takes_only=False)

    assert (media_root / key).stat().st_mtime_ns == made
    assert len(list((media_root / "audio" / "reply").iterdir())) == 2


def test_a_rejected_take_is_not_played_but_the_accepted_one_is(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes
) -> None:
    turns = three_turns(users["actor"], take_wav)
    rejected = turns[0].takes.get()
    decide(rejected, "reject", "reject", "reject")
    accepted = record(users["actor"], turns[0], take_wav)
    decide(accepted, "accept", "accept", "accept")

    history = conversation_so_far(turns[2], users["actor"], own_takes_only=True)

    assert key_for_viewer(resolve(history[0].audio_url).kwargs["token"], users["actor"]) == accepted.audio_key
    assert history[0].take_status == "Accepted"


def test_the_reviewer_hears_earlier_turns_without_learning_who_recorded(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes
) -> None:
    turns = three_turns(users["actor"], take_wav)
    take = record(users["actor"], turns[2], take_wav)
    review = first_review(take)
    reviewer = Client()
    reviewer.force_login(review.reviewer)

    page = reviewer.get(reverse("annotation:review_take", args=[review.public_id])).content.decode()

    takes = audio_sources(page, "history-take")
    assert len(takes) == 2 and len(audio_sources(page, "history-reply")) == 2
    assert fetched(reviewer, takes[1])[:4] == b"RIFF"
    assert not re.search(r"\bactor\b", page.replace("actor_queue", ""))
    for earlier in turns[:2]:
        assert str(earlier.takes.get().public_id) not in page
    assert str(take.public_id) not in page
    assert "In review</span>" not in page  # no outcome of other reviewers' verdicts either


def test_the_playback_gate_stays_on_the_take_under_review(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes
) -> None:
    turns = three_turns(users["actor"], take_wav)
    heard(*[turn.takes.get() for turn in turns[:2]])  # the context was heard in full
    review = first_review(record(users["actor"], turns[2], take_wav))
    reviewer = Client()
    reviewer.force_login(review.reviewer)
    url = reverse("annotation:review_take", args=[review.public_id])

    page = reviewer.get(url).content.decode()
    response = reviewer.post(url, {"verdict": "accept"})

    assert 'data-unlocked="false"' in page
    assert response.status_code == 400
    assert Review.objects.get(pk=review.pk).verdict == Review.Verdict.PENDING


def test_another_actor_and_other_roles_never_see_a_turn(
    users: dict[str, User], make_user, media_root, client_for
) -> None:
    dialogue = DialogueFactory.create(turns=2, turns__actor=users["actor"])
    url = reverse("annotation:record_item", args=[dialogue.turns.get(turn=2).external_id])
    from webapp.roles import Role

    stranger = Client()
    stranger.force_login(make_user(Role.VOICE_ACTOR, "stranger"))

    assert stranger.get(url).status_code == 404
    assert client_for("reviewer").get(url).status_code == 403
    assert client_for("admin").get(url).status_code in (403, 404)
    assert Client().get(url).status_code == 302


def test_the_review_api_gives_the_reviewer_the_same_context(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes
) -> None:
    turns = three_turns(users["actor"], take_wav)
    review = first_review(record(users["actor"], turns[2], take_wav))
    reviewer = Client()
    reviewer.force_login(review.reviewer)

    listed = reviewer.get(reverse("annotation:api_open_reviews")).json()

    entry = next(row for row in listed if row["id"] == str(review.public_id))
    assert entry["item"]["turn"] == 3
    earlier = entry["conversation_so_far"]
    assert [(turn["turn"], turn["text"], turn["reply"]) for turn in earlier] == [
        (turn.turn, turn.text, turn.reference_reply) for turn in turns[:2]
    ]
    assert fetched(reviewer, earlier[0]["audio_url"])[:4] == b"RIFF"
    assert fetched(reviewer, earlier[1]["reply_audio_url"])[:4] == b"RIFF"
    assert "actor" not in str(listed) and str(turns[0].takes.get().public_id) not in str(listed)
    single = [row for row in listed if row["item"]["turn"] is None]
    assert all(row["conversation_so_far"] == [] for row in single)


def test_the_review_api_costs_the_same_queries_however_many_dialogue_turns_wait(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes
) -> None:
    def queries_for_open_reviews() -> int:
        reviewer = Client()
        reviewer.force_login(review_panel[0])
        with CaptureQueriesContext(connection) as queries:
            listed = reviewer.get(reverse("annotation:api_open_reviews"))
        assert listed.status_code == 200
        return len(queries)

    def recorded_dialogue() -> None:
        dialogue = DialogueFactory.create(turns=3, turns__actor=users["actor"])
        for turn in dialogue.turns.order_by("turn"):
            record(users["actor"], turn, take_wav)

    # given one recorded three-turn dialogue waiting for review, and then four
    recorded_dialogue()
    one = queries_for_open_reviews()
    for _ in range(3):
        recorded_dialogue()

    # then listing twelve reviews with their conversations costs what listing three did
    assert queries_for_open_reviews() == one


def test_two_open_takes_of_one_turn_each_get_the_conversation_once(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes
) -> None:
    # given turn 2 recorded twice while the first take is still in review
    dialogue = DialogueFactory.create(turns=3, turns__actor=users["actor"])
    first, second, _third = dialogue.turns.order_by("turn")
    record(users["actor"], first, take_wav)
    takes = [record(users["actor"], second, take_wav) for _ in range(2)]
    shared = set.intersection(*(set(take.reviews.values_list("reviewer", flat=True)) for take in takes))
    reviewer = Client()
    reviewer.force_login(User.objects.get(pk=next(iter(shared))))

    # when a reviewer of both lists their open reviews
    listed = reviewer.get(reverse("annotation:api_open_reviews")).json()

    # then each review of turn 2 carries turn 1 once, and nothing from turns after it
    of_turn_two = [row for row in listed if row["item"]["turn"] == 2]
    assert len(of_turn_two) == 2
    assert all([turn["turn"] for turn in row["conversation_so_far"]] == [1] for row in of_turn_two)
