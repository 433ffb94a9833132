"""A dialogue's turns always go to one actor (speaker consistency), by every way of assigning."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from django.urls import reverse

from annotation.recording.assignment import dialogue_assignment
from annotation.recording.items import assign_items
from annotation.recording.models import Dialogue, Item
from tests.factories import DialogueFactory, ItemFactory
from webapp.models import User
from webapp.roles import Role


@pytest.fixture
def actors(make_user) -> list[User]:
    return [make_user(Role.VOICE_ACTOR, f"voice{n}") for n in range(1, 4)]


def actors_per_dialogue() -> dict[int, set[int | None]]:
    found: dict[int, set[int | None]] = {}
    for dialogue_id, actor_id in Item.objects.dialogue_turns().values_list("dialogue_id", "actor_id"):
        found.setdefault(dialogue_id, set()).add(actor_id)
    return found


def test_no_dialogue_ends_up_with_two_actors_in_a_mixed_batch(actors: list[User]) -> None:
    for turns in (5, 5, 3, 2, 1):
        DialogueFactory.create(turns=turns)
    for number in range(7):
        ItemFactory.create(external_id=f"EE-{number}")

    report = assign_items(Item.objects.all(), actors)

    assert all(len(holders) == 1 and None not in holders for holders in actors_per_dialogue().values())
    assert sum(count for _, count in report.assigned) == Item.objects.count() == 23
    shares = sorted(count for _, count in report.assigned)
    assert shares[-1] - shares[0] <= 5  # dialogues are dealt whole, singles even the shares out


def test_choosing_one_turn_chooses_its_whole_dialogue(actors: list[User]) -> None:
    dialogue = DialogueFactory.create(turns=4)

    assign_items(Item.objects.filter(dialogue=dialogue, turn=2), actors[:2])

    assert set(dialogue.turns.values_list("actor_id", flat=True)) == {actors[0].pk}
    assert set(dialogue.turns.values_list("state", flat=True)) == {Item.State.RECORDING}


def test_reassigning_part_of_a_dialogue_moves_every_turn(actors: list[User]) -> None:
    first, second, _ = actors
    dialogue = DialogueFactory.create(turns=3, turns__actor=first)

    assign_items(Item.objects.filter(dialogue=dialogue, turn=3), [second])

    assert set(dialogue.turns.values_list("actor_id", flat=True)) == {second.pk}


def test_a_dialogue_with_a_turn_in_review_keeps_its_actor_for_every_turn(actors: list[User]) -> None:
    first, second, _ = actors
    dialogue = DialogueFactory.create(turns=3, turns__actor=first)
    dialogue.turns.filter(turn=1).update(state=Item.State.IN_REVIEW)

    report = assign_items(Item.objects.filter(dialogue=dialogue), [second])

    assert report.skipped == 3
    assert set(dialogue.turns.values_list("actor_id", flat=True)) == {first.pk}


def test_dialogues_are_dealt_to_the_least_loaded_actor_largest_first() -> None:
    plan = dialogue_assignment([(1, 2), (2, 5), (3, 5), (4, 1)], [10, 20], {10: 3})

    # loads: 10 has 3; 2 -> 20 (0), 3 -> 10 (3), 1 -> 20 (5), 4 -> 20 (7 < 8)
    assert plan == {2: 20, 3: 10, 1: 20, 4: 20}


@pytest.mark.parametrize("seed", range(4))
def test_random_batches_never_split_a_dialogue(actors: list[User], seed: int) -> None:
    sizes = list(itertools.islice(itertools.cycle([5, 1, 3, 2, 4]), seed, seed + 6))
    dialogues = [DialogueFactory.create(turns=size) for size in sizes]
    chosen = [dialogue.turns.get(turn=1).pk for dialogue in dialogues[::2]]

    assign_items(chosen, actors[: 1 + seed % 3])
    assign_items(Item.objects.filter(turn__in=[2, 3]), actors[::-1])

    holders = actors_per_dialogue()
    assert all(len(holder) == 1 for holder in holders.values()), holders


def test_the_assign_page_hands_out_whole_dialogues(actors: list[User], client_for) -> None:
    DialogueFactory.create(turns=5)
    DialogueFactory.create(turns=5)
    single = ItemFactory.create(external_id="EE-1")

    response = client_for("admin").post(
        reverse("annotation:assign_items"),
        {"which": "dialogues", "actors": [actor.pk for actor in actors[:2]]},
    )

    assert response.status_code == 302
    single.refresh_from_db()
    assert single.actor is None
    assert Counter(len(h) for h in actors_per_dialogue().values()) == {1: 2}
    assert set(Dialogue.objects.values_list("turns__actor", flat=True)) == {actors[0].pk, actors[1].pk}


def test_the_assignment_api_keeps_dialogues_whole(actors: list[User], client_for) -> None:
    dialogue = DialogueFactory.create(turns=3, external_id="ED-9")

    response = client_for("admin").post(
        reverse("annotation:api_assignments"),
        {"items": ["ED-9.t2"], "actors": [actors[1].username, actors[2].username]},
        content_type="application/json",
    )

    assert response.status_code == 200, response.content
    assert response.json()["assigned"] == {actors[1].username: 3, actors[2].username: 0}
    assert set(dialogue.turns.values_list("actor_id", flat=True)) == {actors[1].pk}


def test_the_assignment_api_takes_dialogues_by_id(actors: list[User], client_for) -> None:
    first = DialogueFactory.create(turns=2, external_id="ED-A")
    DialogueFactory.create(turns=2, external_id="ED-B")

    response = client_for("admin").post(
        reverse("annotation:api_assignments"),
        {"dialogues": ["ED-A"], "actors": [actors[0].username]},
        content_type="application/json",
    )
    nothing = client_for("admin").post(
        reverse("annotation:api_assignments"),
        {"actors": [actors[0].username]},
        content_type="application/json",
    )

    assert response.status_code == 200 and response.json()["assigned"] == {actors[0].username: 2}
    assert set(first.turns.values_list("actor_id", flat=True)) == {actors[0].pk}
    assert not Item.objects.filter(dialogue__external_id="ED-B", actor__isnull=False).exists()
    assert nothing.status_code == 400 and "Name the items or the dialogues" in nothing.json()["detail"] + str(
        nothing.json()["problems"]
    )
