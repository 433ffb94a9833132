"""A dialogue turn's drill-down shows the conversation before it, and per system the history its judge read."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.recording.models import Dialogue
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import DialogueFactory, ModelOutputFactory


@pytest.fixture
def dialogue(db: None) -> Dialogue:
    dialogue = DialogueFactory.create(external_id="ED-1", turns=3)
    own = System.objects.create(name="Own", text_only=True)
    late = System.objects.create(name="Late", text_only=True)
    for turn in (1, 3):
        ModelOutputFactory.create(
            system=own, item=dialogue.turns.get(turn=turn), response_text=f"Own reply to turn {turn}."
        )
    ModelOutputFactory.create(system=late, item=dialogue.turns.get(turn=3), response_text="Late reply.")
    return dialogue


def _output_section(html: str, system: str) -> str:
    match = re.search(
        rf'<section class="card" data-testid="output" data-system="{system}">(.*?)</section>', html, re.S
    )
    assert match is not None, system
    return match.group(1)


def test_a_turn_shows_the_conversation_and_each_systems_history(dialogue: Dialogue, client_for) -> None:
    third = dialogue.turns.get(turn=3)
    html = client_for("admin").get(reverse("evaluation:item_detail", args=[third.pk])).content.decode()
    assert "turn 3 of dialogue ED-1" in html
    conversation = re.search(r'data-testid="conversation">(.*?)</section>', html, re.S)
    assert conversation is not None
    for earlier in dialogue.turns.filter(turn__lt=3):
        assert earlier.text in conversation.group(1) and earlier.reference_reply in conversation.group(1)
    own = _output_section(html, "Own")
    assert re.findall(r'data-turn="(\d)" data-reply="(\w+)"', own) == [("1", "own"), ("2", "reference")]
    assert "Assistant (this system): Own reply to turn 1." in own
    late = _output_section(html, "Late")
    assert re.findall(r'data-turn="(\d)" data-reply="(\w+)"', late) == [
        ("1", "reference"),
        ("2", "reference"),
    ]
    assert "Own reply" not in late


def test_a_first_turn_has_no_history_and_a_single_item_no_conversation(
    dialogue: Dialogue, client_for
) -> None:
    client = client_for("admin")
    first = client.get(
        reverse("evaluation:item_detail", args=[dialogue.turns.get(turn=1).pk])
    ).content.decode()
    assert "This is the dialogue's first turn." in first and 'data-testid="history"' not in first
    single = BenchmarkItemFactory.create(external_id="EE-1")
    ModelOutputFactory.create(system=System.objects.get(name="Own"), item=single)
    page = client.get(reverse("evaluation:item_detail", args=[single.pk])).content.decode()
    assert 'data-testid="conversation"' not in page and 'data-testid="history"' not in page
