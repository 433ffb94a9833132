"""The dialogue so far, as the workbench and the adjudication page show it above a later turn.

For each earlier turn: the user's words, their accepted take (a signed link for the viewer) and
the assistant's reply that followed, which is that turn's current gold reference response when a
lead wrote one, else the item's scripted `reference_reply`: the one rule of
`annotation.dialogues.history` with the "gold" source, which the gold export and training use too.

Blindness (`annotation.labelling.access.may_see_others_labels`): the history carries no
annotation of any turn, the viewer's own or anyone else's. Of the labels of the turn just before,
only its gold is shown, and only when it exists (`previous_gold`): gold is adjudicated and final
(its item's annotations are closed), not a peer's open judgement, and it anchors the "emotion
change since the last turn" label. Without gold the annotator judges the change from the audio.

Gold lives in a later layer (`annotation.gold`), so it is read here through the reader gold
registers (`annotation.recording.current_gold`), never by importing its model.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser

from annotation.dialogues.history import earlier_replies
from annotation.recording.current_gold import current_gold_by_item
from annotation.recording.models import Item
from webapp.models import User
from webapp.storage import audio_url


@dataclass(frozen=True)
class EarlierTurn:
    turn: int
    external_id: str
    text: str
    audio_url: str  # "" when the turn has no accepted take
    reply: str  # what the assistant answered this turn ("" when nothing is known)
    reply_is_gold: bool  # the reply is the turn's gold reference response (else the scripted one)


@dataclass(frozen=True)
class PreviousGold:
    """The adjudicated perception of the turn before, when it has gold."""

    turn: int
    emotion: str
    intensity: str
    polarity: str


def dialogue_history(item: Item, viewer: User | AnonymousUser) -> list[EarlierTurn]:
    """Return the turns before `item` (none for a single item or a first turn), first turn first."""
    earlier = list(Item.objects.earlier_turns(item).select_related("recording"))
    if not earlier:
        return []
    replies = {turn.item_id: turn for turn in earlier_replies([item], "gold")[item.pk]}
    history = []
    for turn in earlier:
        reply = replies[turn.pk]
        recording = turn.recording
        history.append(
            EarlierTurn(
                turn=turn.turn or 0,
                external_id=turn.external_id,
                text=turn.text,
                audio_url=audio_url(recording.audio_key, viewer) if recording and recording.audio_key else "",
                reply=reply.reply,
                reply_is_gold=reply.origin == "gold",
            )
        )
    return history


def previous_gold(item: Item) -> PreviousGold | None:
    """Return the gold perception of the turn just before `item`, or None (no such turn, or no gold)."""
    if item.dialogue_id is None or not item.turn or item.turn < 2:
        return None
    previous = Item.objects.filter(dialogue_id=item.dialogue_id, turn=item.turn - 1).values_list(
        "pk", flat=True
    )
    found = current_gold_by_item(previous)
    perception = next(iter(found.values())).perception if found else {}
    if not perception.get("emotion"):
        return None  # no gold, or gold without a perception (imported replies only): nothing to anchor
    return PreviousGold(
        turn=item.turn - 1,
        emotion=str(perception.get("emotion", "")),
        intensity=str(perception.get("intensity", "")),
        polarity=str(perception.get("polarity", "")),
    )
