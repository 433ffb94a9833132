"""Bulk assignment in the database and through the admin page: balanced, scenario mix kept, reassignable."""

from __future__ import annotations

from collections import Counter

import pytest
from django.urls import reverse

from annotation.recording.items import assign_items
from annotation.recording.models import Item
from tests.factories import ItemFactory
from webapp.models import User
from webapp.roles import Role


@pytest.fixture
def actors(make_user) -> list[User]:
    return [make_user(Role.VOICE_ACTOR, f"voice{n}") for n in range(1, 4)]


def make_scripts(counts: dict[str, int]) -> None:
    number = 0
    for scenario, count in counts.items():
        for _ in range(count):
            number += 1
            ItemFactory.create(external_id=f"EE-{number:04d}", scenario=scenario)


def test_scripts_are_shared_evenly_and_so_is_each_scenario(actors: list[User]) -> None:
    make_scripts({"implicit": 7, "emotion-shift": 5, "high-arousal": 3})

    report = assign_items(Item.objects.all(), actors)

    assert sorted(n for _, n in report.assigned) == [5, 5, 5]
    for scenario in ("implicit", "emotion-shift", "high-arousal"):
        shares = Counter(Item.objects.filter(scenario=scenario).values_list("actor", flat=True))
        assert max(shares.values()) - min(shares.values()) <= 1 and sum(shares.values()) > 0
    assert set(Item.objects.values_list("state", flat=True)) == {Item.State.RECORDING}


def test_reassigning_moves_scripts_but_not_those_in_review(actors: list[User]) -> None:
    first, second, third = actors
    ItemFactory.create(external_id="EE-1", actor=first)
    ItemFactory.create(external_id="EE-2", actor=first)
    ItemFactory.create(external_id="EE-3", actor=first, state=Item.State.IN_REVIEW)

    report = assign_items(Item.objects.filter(actor=first), [second, third])

    assert report.skipped == 1
    assert dict(Item.objects.values_list("external_id", "actor")) == {
        "EE-1": second.pk,
        "EE-2": third.pk,
        "EE-3": first.pk,
    }


def test_only_voice_actors_can_be_given_scripts(users: dict[str, User]) -> None:
    ItemFactory.create(external_id="EE-1")
    with pytest.raises(ValueError, match="not voice actors"):
        assign_items(Item.objects.all(), [users["reviewer"]])


def test_the_admin_page_assigns_a_filtered_batch(actors: list[User], client_for) -> None:
    make_scripts({"implicit": 4, "emotion-shift": 2})

    response = client_for("admin").post(
        reverse("annotation:assign_items"),
        {
            "which": "unassigned",
            "scenarios": ["implicit"],
            "actors": [actors[0].pk, actors[1].pk],
            "limit": "3",
        },
        follow=True,
    )

    assert response.status_code == 200
    assert "Assigned 3 scripts" in response.content.decode()
    assert Item.objects.filter(actor__isnull=False).count() == 3
    assert not Item.objects.filter(scenario="emotion-shift", actor__isnull=False).exists()
