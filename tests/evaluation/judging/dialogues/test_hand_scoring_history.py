"""An evaluator scoring a dialogue turn by hand reads the conversation its judge read, and never the system."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.recording.models import Dialogue
from evaluation.judging.human_scoring import draw_rubric_sample
from evaluation.judging.models import HumanJudgement
from evaluation.outputs.models import System
from evaluation.outputs.signals import outputs_changed
from tests.evaluation.judging_support import GOLD_PERCEPTION, GOLD_TOM
from tests.factories import DialogueFactory, GoldReferenceFactory, ModelOutputFactory
from webapp.models import User


@pytest.fixture
def dialogue(db: None) -> Dialogue:
    dialogue = DialogueFactory.create(external_id="ED-1", turns=2)
    system = System.objects.create(name="Secret-System-Name", text_only=True)
    for item in dialogue.turns.all():
        GoldReferenceFactory.create(item=item, perception=dict(GOLD_PERCEPTION), tom=dict(GOLD_TOM))
        ModelOutputFactory.create(system=system, item=item, response_text=f"Model reply to turn {item.turn}.")
    return dialogue


def test_the_hand_scoring_page_of_a_turn_shows_its_history_blind(
    dialogue: Dialogue, users: dict[str, User], client_for
) -> None:
    sample = draw_rubric_sample(
        name="s", benchmark_version="echoeval-v1", n_items=2, evaluators=[users["evaluator"]]
    )
    second = sample.entries.get(output__item__turn=2).output
    first = sample.entries.get(output__item__turn=1).output
    client = client_for("evaluator")
    html = client.get(reverse("evaluation:rubric_score", args=[sample.pk, second.public_id])).content.decode()
    assert "Turn 2 of a dialogue" in html
    assert "The assistant (this model): Model reply to turn 1." in html
    assert dialogue.turns.get(turn=1).text in html
    assert "Secret-System-Name" not in html
    opening = client.get(
        reverse("evaluation:rubric_score", args=[sample.pk, first.public_id])
    ).content.decode()
    assert "Turn 1 of a dialogue" in opening and 'data-turn="1"' not in opening


def test_a_changed_earlier_reply_drops_the_hand_scores_of_later_turns(
    dialogue: Dialogue, users: dict[str, User]
) -> None:
    outputs = {output.item.turn: output for output in System.objects.get().outputs.select_related("item")}
    for output in outputs.values():
        HumanJudgement.objects.create(
            output=output,
            stage="response_content",
            evaluator=users["evaluator"],
            subscores={"content": 4},
            raw_sum=4,
            score=4,
        )
    outputs_changed.send(sender=type(outputs[1]), outputs=[outputs[1]])
    assert HumanJudgement.objects.in_use().count() == 0  # archived: they scored another history
