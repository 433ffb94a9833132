"""Demo labels of dialogue turns: the first recorded dialogue annotated turn by turn (with the
cross-turn labels), gold on its first turns, the rest left for the demo annotators and lead.

Built with the same workflows people use, like `annotation.demo.labels`, so the workbench shows a
turn's history with earlier gold, and the judges and training jobs find multi-turn gold.
"""

from __future__ import annotations

from typing import Any

from annotation.demo.dialogues import DEMO_DIALOGUES, RECORDED_DIALOGUES, DemoDialogue, DemoTurn
from annotation.demo.items import DemoItem
from annotation.demo.labels import adjudicate_demo_gold, submit_every_annotation
from annotation.labelling.assignment import assign_annotators
from annotation.recording.models import Dialogue, Item
from webapp.lib.vocabulary import INTENSITIES
from webapp.models import User

# In the first recorded dialogue: turns annotated by everyone, and of those the turns given gold.
ANNOTATED_TURNS, GOLD_TURNS = 4, 3


def cross_turn_labels(previous: DemoTurn, current: DemoTurn) -> dict[str, Any]:
    """Return plausible cross-turn labels of `current` against the turn before it."""
    if previous.emotion != current.emotion:
        change = "shifted"
    else:
        step = INTENSITIES.index(current.intensity) - INTENSITIES.index(previous.intensity)
        change = "intensified" if step > 0 else "eased" if step < 0 else "unchanged"
    helped = "yes" if change == "eased" or current.emotion in ("happy", "neutral") else "partly"
    return {
        "emotion_change": change,
        "emotion_change_cause": f"After the reply to turn {previous.text!r}, the user turns to what comes next.",
        "last_strategy_helped": helped,
        "strategy_adaptation": f"Move to {current.strategy.replace('-', ' ')}.",
        "adaptation_strategies": [current.strategy],
    }


def _as_demo_item(dialogue: DemoDialogue, number: int, turn: DemoTurn) -> DemoItem:
    return DemoItem(
        Dialogue.turn_external_id(dialogue.external_id, number),
        turn.scenario,
        turn.emotion,
        "",
        turn.intensity,
        turn.text,
        f"{turn.intensity} {turn.emotion} delivery",  # the prosody caption the demo labels give
        turn.pitch,
        turn.rate_wpm,
    )


def seed_dialogue_labels() -> int:
    """Annotate and adjudicate demo dialogue turns; return how many dialogue turns have gold."""
    lead = User.objects.get(username="lead")
    for dialogue in DEMO_DIALOGUES:
        if dialogue.external_id not in RECORDED_DIALOGUES:
            continue
        labelled = dialogue.external_id == RECORDED_DIALOGUES[0]
        for number, turn in enumerate(dialogue.turns, start=1):
            item = Item.objects.select_related("recording").get(
                external_id=Dialogue.turn_external_id(dialogue.external_id, number)
            )
            if item.state not in (Item.State.RECORDED, Item.State.ANNOTATING, Item.State.GOLD):
                continue
            assign_annotators(item)
            if not labelled or number > ANNOTATED_TURNS:
                continue  # left for the demo annotators, turn by turn
            demo = _as_demo_item(dialogue, number, turn)
            cross_turn = cross_turn_labels(dialogue.turns[number - 2], turn) if number > 1 else None
            submit_every_annotation(item, demo, cross_turn)
            if number <= GOLD_TURNS:
                adjudicate_demo_gold(item, demo, lead, turn.reply, cross_turn)
    return Item.objects.dialogue_turns().filter(state=Item.State.GOLD).count()
