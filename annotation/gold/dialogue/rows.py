"""The dialogue fields of a gold export row, and their checks on import (the row's other fields:
`annotation.gold.export`, `annotation.gold.importing`).

Every row carries them; a single item has `dialogue_id` "" and `turn` None, no cross-turn labels
and no history:

    "dialogue_id": "ED-0001", "turn": 3,
    "expected_strategy": ..., "reference_reply": ...,       (the item's scripted plan and reply)
    "cross_turn": {...} | null,                              (annotation.labelling.dialogue.cross_turn)
    "annotations": [{..., "cross_turn": {...} | null}, ...]  (each annotator's, beside perception and tom)
    "history": [{"turn": 1, "text": ..., "audio": <as the row's "audio">, "reply": ...}, ...]

`history` holds the turns before this one, first first; `reply` is that turn's current gold
reference response when it has one, else its item's `reference_reply` (the one rule:
`annotation.dialogues.history`, "gold" source: blank gold falls back, replies are stripped). In JSONL `audio` is the path of a WAV file
beside the row's own audio; in parquet the WAV bytes, as for the row.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from annotation.dialogues.history import earlier_replies
from annotation.labelling.dialogue.cross_turn import check_cross_turn, needs_cross_turn, normalise_cross_turn
from annotation.recording.models import Dialogue, Item
from webapp.storage import read_media

DIALOGUE_ROW_FIELDS = ("dialogue_id", "turn", "expected_strategy", "reference_reply", "cross_turn", "history")


def dialogue_fields(
    item: Item,
    gold_cross_turn: Mapping[str, Any],
    *,
    audio_bytes: bool,
    audio_name: Callable[[str], str],
    audio_link: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """Return the dialogue fields of an item's export row (`audio_name(external_id)`: its WAV name;
    `audio_link(key)`: a history turn's audio as a link instead, as the API gives the row's own)."""
    fields: dict[str, Any] = {
        "dialogue_id": item.dialogue.external_id if item.dialogue is not None else "",
        "turn": item.turn,
        "expected_strategy": item.expected_strategy,
        "reference_reply": item.reference_reply,
        "cross_turn": exported_cross_turn(gold_cross_turn, item.turn),
        "history": [],
    }
    if not needs_cross_turn(item.turn):
        return fields
    earlier = Item.objects.earlier_turns(item).select_related("recording")
    replies = {turn.item_id: turn.reply for turn in earlier_replies([item], "gold")[item.pk]}
    for turn in earlier:
        audio: Any = None
        if turn.recording is not None and turn.recording.audio_key and audio_link is not None:
            audio = audio_link(turn.recording.audio_key)
        elif turn.recording is not None and turn.recording.audio_key:
            data = read_media(turn.recording.audio_key) if audio_bytes else None
            audio = {"bytes": data, "path": audio_name(turn.external_id)}
        fields["history"].append(
            {
                "turn": turn.turn,
                "text": turn.text,
                "audio": audio,
                "reply": replies[turn.pk],
            }
        )
    return fields


# --- Import -------------------------------------------------------------------------------------


def read_history_audio(folder: Path, row: dict[str, Any]) -> str | None:
    """Replace each JSONL history entry's audio path (relative to `folder`) by {"bytes", "path"};
    return what is wrong instead (nothing is read from outside the folder)."""
    history = row.get("history")
    if not isinstance(history, list):
        return None
    for entry in history:
        audio = entry.get("audio") if isinstance(entry, dict) else None
        if isinstance(audio, str) and audio:
            path = (folder / audio).resolve()
            if folder.resolve() not in path.parents or not path.is_file():
                return f"history: no audio file {audio!r} beside the JSONL"
            entry["audio"] = {"bytes": path.read_bytes(), "path": path.name}
    return None


def dialogue_problems(row: Mapping[str, Any], strategy_slugs: Collection[str]) -> list[tuple[str, str]]:
    """Return (field, message) for what is wrong with a row's dialogue fields (none for a single item)."""
    dialogue_id, turn = row.get("dialogue_id") or "", row.get("turn")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 1):
        return [("turn", "must be a whole number from 1")]
    if not isinstance(dialogue_id, str) or bool(dialogue_id) != (turn is not None):
        return [("dialogue_id", "a dialogue turn needs both dialogue_id and turn; a single item neither")]
    if dialogue_id and row.get("id") != Dialogue.turn_external_id(dialogue_id, turn or 0):
        return [("id", f"a turn's id must be {Dialogue.turn_external_id(dialogue_id, turn or 0)}")]
    problems = [
        (name, "must be text")
        for name in ("expected_strategy", "reference_reply")
        if row.get(name) is not None and not isinstance(row[name], str)
    ]
    cross_turn = row.get("cross_turn")
    if cross_turn is not None and not isinstance(cross_turn, Mapping):
        return [*problems, ("cross_turn", "must be an object")]
    problems += [
        (problem.field, problem.message)
        for problem in check_cross_turn(
            cross_turn, needed=needs_cross_turn(turn), strategy_slugs=strategy_slugs, complete=True
        )
    ]
    for index, annotation in enumerate(row.get("annotations") or [], start=1):
        labelled = annotation.get("cross_turn") if isinstance(annotation, Mapping) else None
        if labelled is not None and not isinstance(labelled, Mapping):
            problems.append((f"annotations[{index}].cross_turn", "must be an object"))
            continue
        problems += [
            (f"annotations[{index}].{problem.field}", problem.message)
            for problem in check_cross_turn(
                labelled, needed=needs_cross_turn(turn), strategy_slugs=strategy_slugs, complete=True
            )
        ]
    history = row.get("history") or []
    if not isinstance(history, list):
        return [*problems, ("history", "must be a list")]
    for index, entry in enumerate(history, start=1):
        if (
            not isinstance(entry, Mapping)
            or not isinstance(entry.get("turn"), int)
            or not 1 <= entry["turn"] < (turn or 1)
            or not isinstance(entry.get("text"), str)
            or not isinstance(entry.get("reply") or "", str)
        ):
            problems.append((f"history[{index}]", "needs an earlier turn number, its text and reply"))
    return problems


def attach_to_dialogue(item: Item, row: Mapping[str, Any]) -> None:
    """Make an imported item the row's dialogue turn (the dialogue is created when new)."""
    if not row.get("dialogue_id"):
        return
    dialogue, _ = Dialogue.objects.get_or_create(
        external_id=row["dialogue_id"], defaults={"split": row.get("split") or item.split}
    )
    item.dialogue, item.turn = dialogue, row["turn"]
    item.expected_strategy = row.get("expected_strategy") or item.expected_strategy
    item.reference_reply = row.get("reference_reply") or item.reference_reply
    item.save(update_fields=["dialogue", "turn", "expected_strategy", "reference_reply", "updated_at"])


def cross_turn_of(labels: Mapping[str, Any], turn: int | None) -> dict[str, Any]:
    """Return the cross-turn document of an imported row or annotation ({} unless a later turn)."""
    return normalise_cross_turn(labels.get("cross_turn"), needed=needs_cross_turn(turn))


def exported_cross_turn(document: Mapping[str, Any], turn: int | None) -> dict[str, Any] | None:
    """Return a cross-turn document as an export row holds it: null, not {}, where there is none
    (parquet reads an empty struct back as a struct of nulls)."""
    return normalise_cross_turn(document, needed=True) if needs_cross_turn(turn) else None
