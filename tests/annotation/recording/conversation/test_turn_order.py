"""A dialogue turn is recorded only after every earlier turn has a take that is not rejected."""

from __future__ import annotations

from django.urls import reverse

from annotation.recording.models import Item
from annotation.recording.takes import recordable_refusal
from tests.annotation.recording.support import decide, record, upload
from tests.factories import DialogueFactory, ItemFactory
from webapp.models import User


def turns_of(actor: User, count: int = 3) -> list[Item]:
    dialogue = DialogueFactory.create(turns=count, turns__actor=actor)
    return list(dialogue.turns.order_by("turn"))


def test_turn_two_waits_for_turn_one(users: dict[str, User], media_root, take_wav: bytes, client_for) -> None:
    first, second, third = turns_of(users["actor"])

    refused = upload(client_for("actor"), second, take_wav)

    assert refused.status_code == 409
    assert refused.json()["detail"].startswith("Record turn 1 of this dialogue first")
    assert not second.takes.exists()
    assert (recordable_refusal(third, users["actor"]) or "").startswith(
        "Record turns 1, 2 of this dialogue first"
    )
    assert recordable_refusal(first, users["actor"]) is None


def test_a_take_in_review_opens_the_next_turn(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes, client_for
) -> None:
    first, second, _ = turns_of(users["actor"])
    record(users["actor"], first, take_wav)

    response = upload(client_for("actor"), second, take_wav)

    assert response.status_code == 201, response.content


def test_a_rejected_take_does_not_count(
    users: dict[str, User], review_panel: list[User], media_root, take_wav: bytes
) -> None:
    first, second, _ = turns_of(users["actor"])
    take = record(users["actor"], first, take_wav)
    decide(take, "reject", "reject", "reject")

    assert (recordable_refusal(second, users["actor"]) or "").startswith(
        "Record turn 1 of this dialogue first"
    )


def test_the_recorder_page_says_why_and_offers_no_recorder(users: dict[str, User], client_for) -> None:
    _, second, _ = turns_of(users["actor"])

    page = (
        client_for("actor").get(reverse("annotation:record_item", args=[second.external_id])).content.decode()
    )

    assert 'data-testid="not-recordable"' in page and "Record turn 1 of this dialogue first" in page
    assert 'id="recorder"' not in page


def test_single_items_are_recordable_as_before(users: dict[str, User], client_for) -> None:
    item = ItemFactory.create(actor=users["actor"])

    page = (
        client_for("actor").get(reverse("annotation:record_item", args=[item.external_id])).content.decode()
    )

    assert 'id="recorder"' in page and "not-recordable" not in page
    assert 'data-testid="conversation-so-far"' not in page


def test_the_actor_queue_lists_dialogue_turns_together_in_order(users: dict[str, User], client_for) -> None:
    ItemFactory.create(actor=users["actor"], external_id="zz-single")
    DialogueFactory.create(external_id="ED-2", turns=2, turns__actor=users["actor"])
    DialogueFactory.create(external_id="ED-1", turns=3, turns__actor=users["actor"])

    page = client_for("actor").get(reverse("annotation:actor_queue")).content.decode()

    order = ["zz-single", "ED-1.t1", "ED-1.t2", "ED-1.t3", "ED-2.t1", "ED-2.t2"]
    positions = [page.index(f'id="item-{external_id}"') for external_id in order]
    assert positions == sorted(positions)
    assert page.count('data-testid="dialogue-heading"') == 2


def test_the_actor_queue_offers_record_only_for_the_turn_that_is_open(
    users: dict[str, User], client_for
) -> None:
    DialogueFactory.create(external_id="ED-1", turns=3, turns__actor=users["actor"])

    page = client_for("actor").get(reverse("annotation:actor_queue")).content.decode()

    record_links = [
        f'href="{reverse("annotation:record_item", args=[f"ED-1.t{turn}"])}"' for turn in (1, 2, 3)
    ]
    assert [link in page for link in record_links] == [True, False, False]
    assert page.count('data-testid="turn-locked"') == 2
    assert "Locked: Record turns 1, 2 of this dialogue first" in page
