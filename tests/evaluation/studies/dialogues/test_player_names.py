"""Every player on a dialogue rating page says what it plays, turn by turn (WCAG 4.1.2)."""

from __future__ import annotations

import re

from django.urls import reverse

from tests.evaluation.studies.dialogues.support import build_dialogue_world, make_dialogue_study

AUDIO_TAG = re.compile(r"<audio\b[^>]*>")
ARIA_LABEL = re.compile(r'aria-label="([^"]*)"')


def test_each_turns_players_name_the_turn_and_the_speaker(make_user, users, client_for) -> None:
    world = build_dialogue_world(make_user, n_systems=1, n_dialogues=2, turns=2)
    study = make_dialogue_study(world, [users["evaluator"]], users["admin"], ratings_per_output=1)

    page = (
        client_for("evaluator").get(reverse("evaluation:rate_study", args=[study.public_id])).content.decode()
    )

    labels = [ARIA_LABEL.search(tag) for tag in AUDIO_TAG.findall(page)]
    assert [label.group(1) if label else None for label in labels] == [
        "Turn 1: the user speaking",
        "Turn 1: the assistant's reply",
        "Turn 2: the user speaking",
        "Turn 2: the assistant's reply",
    ]
