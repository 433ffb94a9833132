"""Dialogues ready for training and inference: every turn recorded, gold on the turns named."""

from __future__ import annotations

from collections.abc import Iterable

from annotation.recording.models import Dialogue, Item
from tests.factories import DialogueFactory
from tests.ml.jobs.support import TrainingItemFactory
from webapp.lib import vocabulary


def gold_reply(external_id: str, turn: int) -> str:
    return f"Gold reply to turn {turn} of {external_id}."


def planned_reply(external_id: str, turn: int) -> str:
    return f"Planned reply to turn {turn} of {external_id}."


def recorded_dialogue(
    external_id: str,
    turns: int = 3,
    gold_turns: Iterable[int] = (1, 2, 3),
    split: str = vocabulary.TRAIN,
    unrecorded_turns: Iterable[int] = (),
    base_pitch_hz: float = 140.0,
) -> Dialogue:
    """Return a dialogue whose turns are recorded (each a different pitch, from ``base_pitch_hz``), with gold (its response
    ``gold_reply``) on ``gold_turns``; every turn's planned reply is ``planned_reply``."""
    dialogue = DialogueFactory.create(external_id=external_id, turns=0, split=split)
    gold, unrecorded = set(gold_turns), set(unrecorded_turns)
    for turn in range(1, turns + 1):
        fields = {
            "dialogue": dialogue,
            "turn": turn,
            "external_id": Dialogue.turn_external_id(external_id, turn),
            "split": split,
            "reference_reply": planned_reply(external_id, turn),
            "with_gold": turn in gold,
            "reference_response": gold_reply(external_id, turn),
            "pitch_hz": base_pitch_hz + 30 * turn,
        }
        if turn in unrecorded:
            fields.update(recording=None, state=Item.State.SCRIPTED)
        TrainingItemFactory.create(**fields)
    return dialogue
