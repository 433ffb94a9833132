"""The replies after earlier dialogue turns, read in one batch (the rule: `webapp.lib.replies`).

The source ("planned", "gold" or "own") is the caller's; gold is read through the reader gold
registers (`annotation.recording.current_gold`: gold is a later layer) and a system's own replies
come in as data.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from annotation.recording.current_gold import current_gold_by_item
from annotation.recording.models import Item
from webapp.lib.replies import ReplySource, earlier_reply


@dataclass(frozen=True)
class EarlierReply:
    item_id: int
    turn: int
    text: str  # the user's words that turn
    reply: str  # "" when the turn has no reply at all
    origin: ReplySource | None  # where `reply` came from (None: nowhere)


def earlier_replies(
    items: Sequence[Item], source: ReplySource, own: Mapping[int, str] | None = None
) -> dict[int, tuple[EarlierReply, ...]]:
    """Return {item pk: its earlier turns with their replies, first turn first} in two queries
    (single items and first turns get an empty tuple).

    `own`: {earlier item pk: the system's reply text} for the "own" source (the caller reads its
    outputs; this layer cannot).
    """
    result: dict[int, tuple[EarlierReply, ...]] = {item.pk: () for item in items}
    earlier = list(
        Item.objects.earlier_turns_of_all(items).only("pk", "dialogue_id", "turn", "text", "reference_reply")
    )
    if not earlier:
        return result
    gold: dict[int, str] = {}
    if source == "gold":
        gold = {
            pk: found.reference_response
            for pk, found in current_gold_by_item(turn.pk for turn in earlier).items()
        }
    by_dialogue: dict[int, list[EarlierReply]] = defaultdict(list)
    for turn in earlier:
        reply, origin = earlier_reply(
            source, planned=turn.reference_reply, gold=gold.get(turn.pk), own=(own or {}).get(turn.pk)
        )
        by_dialogue[turn.dialogue_id or 0].append(
            EarlierReply(turn.pk, turn.turn or 0, turn.text, reply, origin)
        )
    for item in items:
        if item.dialogue_id is not None and item.turn:
            result[item.pk] = tuple(turn for turn in by_dialogue[item.dialogue_id] if turn.turn < item.turn)
    return result
