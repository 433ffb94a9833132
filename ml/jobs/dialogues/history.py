"""A dialogue turn's history in dataset snapshots and training records.

A snapshot entry of a dialogue turn names, besides its own item, take and gold, each earlier
turn's item, accepted take and current gold (``history``), so the records it yields stay the same
however the studio moves on. A turn whose earlier turns are not all recorded and accepted is
left out: the model cannot hear a conversation with a hole in it.

The reply of an earlier turn is the snapshot's pinned gold reference response when it has one,
else the item's planned ``reference_reply`` (the "gold" source of ``annotation.dialogues.history``). Cross-turn gold fields another stage adds
are not read here: the record's history is audio and replies only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from annotation.gold.models import GoldReference
from annotation.recording.models import Item, Take
from ml.core.config import HISTORY_GOLD, HISTORY_OWN
from ml.core.training_records import HistoryTurn, RecordAudio, TrainingRecord, read_wav
from webapp.lib.replies import earlier_reply
from webapp.storage import read_media

EXCLUDED_EARLIER_TURN_UNRECORDED = "an earlier dialogue turn without an accepted recording"
# What the inference job answers: single items, or dialogues turn by turn with one history mode.
INFERENCE_TURN_CHOICES = (
    ("", "Single items (EchoEval): every recorded item outside a dialogue"),
    (HISTORY_GOLD, "Dialogues turn by turn, hearing the gold replies after earlier turns"),
    (HISTORY_OWN, "Dialogues turn by turn, hearing the model's own earlier replies"),
)


def history_reply(item: Item, gold: GoldReference | None) -> str:
    """Return what the assistant said after an earlier turn: its gold response, else the planned reply."""
    response = gold.reference_response if gold is not None else None
    return earlier_reply("gold", planned=item.reference_reply, gold=response)[0]


def history_entries(items: Sequence[Item]) -> dict[int, list[dict[str, Any]] | None]:
    """Return, for each dialogue turn among ``items`` (by pk), its earlier turns' snapshot rows
    (item, accepted take, current gold or None), first turn first; None when one of them has no
    accepted recording. Single items are not in the result."""
    dialogue_ids = {item.dialogue_id for item in items if item.dialogue_id is not None}
    if not dialogue_ids:
        return {}
    turns: dict[int, list[Item]] = defaultdict(list)
    for turn in (
        Item.objects.filter(dialogue_id__in=dialogue_ids).select_related("recording").order_by("turn")
    ):
        turns[turn.dialogue_id].append(turn)  # type: ignore[index]
    golds = GoldReference.objects.only("id", "item_id").current_by_item(
        [turn.pk for dialogue in turns.values() for turn in dialogue]
    )
    result: dict[int, list[dict[str, Any]] | None] = {}
    for item in items:
        if item.dialogue_id is None or item.turn is None:
            continue
        earlier = [
            turn for turn in turns[item.dialogue_id] if turn.turn is not None and turn.turn < item.turn
        ]
        complete = len(earlier) == item.turn - 1 and all(
            turn.recording is not None and turn.recording.status == Take.Status.ACCEPTED for turn in earlier
        )
        result[item.pk] = (
            [
                {
                    "item": turn.pk,
                    "turn": turn.turn,
                    "take": turn.recording_id,
                    "gold": golds[turn.pk].pk if turn.pk in golds else None,
                }
                for turn in earlier
            ]
            if complete
            else None
        )
    return result


def history_rows(entry: Mapping[str, Any]) -> list[tuple[int, int, int | None]]:
    """Return (item, take, gold) of each earlier turn an entry names (none for a single item)."""
    return [(turn["item"], turn["take"], turn["gold"]) for turn in entry.get("history") or ()]


def missing_history(
    entries: Iterable[Mapping[str, Any]],
) -> tuple[set[int], dict[int, Item], dict[int, Take], dict[int, GoldReference]]:
    """Return the ids of entries whose history rows were deleted, and the rows that still exist."""
    rows = [(entry, row) for entry in entries for row in history_rows(entry)]
    items = Item.objects.select_related("dialogue").in_bulk([row[0] for _, row in rows])
    takes = Take.objects.in_bulk([row[1] for _, row in rows])
    golds = GoldReference.objects.in_bulk([row[2] for _, row in rows if row[2] is not None])
    broken = {
        entry["item"]
        for entry, (item, take, gold) in rows
        if item not in items or take not in takes or (gold is not None and gold not in golds)
    }
    return broken, items, takes, golds


def with_history(
    row: RecordAudio,
    entry: Mapping[str, Any],
    items: Mapping[int, Item],
    takes: Mapping[int, Take],
    golds: Mapping[int, GoldReference],
) -> RecordAudio:
    """Return the record with its dialogue, turn and history (earlier turns' text, audio and reply)."""
    if "dialogue" not in entry:
        return row
    history: list[HistoryTurn] = []
    audio: list[tuple[Any, int]] = []
    for item_pk, take_pk, gold_pk in history_rows(entry):
        item = items[item_pk]
        gold = golds.get(gold_pk) if gold_pk is not None else None
        history.append(HistoryTurn(turn=int(item.turn or 0), text=item.text, reply=history_reply(item, gold)))
        audio.append(read_wav(read_media(takes[take_pk].audio_key)))
    record: TrainingRecord = replace(
        row.record, dialogue_id=str(entry["dialogue"]), turn=int(entry["turn"]), history=tuple(history)
    )
    return replace(row, record=record, history_audio=tuple(audio))
