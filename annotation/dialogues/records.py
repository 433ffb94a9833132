"""The checks a dialogue JSONL line must pass, with no database: one dialogue per line.

A line reads::

    {"dialogue_id": "ED-0001", "split": "test", "topic": "job loss", "voice": "en-us+f3",
     "turns": [{"text": "...", "scenario": "implicit", "target_emotion": "sad",
                "target_intensity": "medium", "expected_strategy": "emotional validation",
                "reference_reply": "..."}, ...]}

Each turn is checked by the item row rule (`item_import.checked_values`), so a turn's script obeys
exactly what a single item's does; the dialogue adds its own rules (an id, 1..max turns, one split).
`annotation.dialogues.transfer` writes what passes, all or nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import BinaryIO

from annotation.recording.item_import import (
    COLUMN_ALIASES,
    EXTERNAL_ID_PATTERN,
    ITEM_FIELDS,
    MAX_ROWS,
    FileProblem,
    RowError,
    checked_values,
    text_lines,
)
from annotation.recording.models import Dialogue
from webapp.lib.jsonlines import json_text

DIALOGUE_KEYS = ("dialogue_id", "split", "topic", "voice", "turns")
# A turn holds an item row's fields (its id and split come from the dialogue) and the plan for it.
TURN_KEYS = (
    *(name for name in ITEM_FIELDS if name not in ("external_id", "split")),
    "expected_strategy",
    "reference_reply",
)
TURN_ALIASES = {**COLUMN_ALIASES, "strategy": "expected_strategy", "reply": "reference_reply", "turn": ""}
DIALOGUE_ALIASES = {"id": "dialogue_id", "external_id": "dialogue_id"}
MAX_DIALOGUE_ID_CHARS = 60  # the turn ids (`ED-0001.t5`) must stay within the item id's 64
MAX_TOPIC_CHARS = 200
MAX_VOICE_CHARS = 64
MAX_STRATEGY_CHARS = 64
MAX_REPLY_CHARS = 4000
LINE = "line"


@dataclass(frozen=True)
class TurnRecord:
    turn: int
    values: dict[str, str]  # Item fields (ITEM_FIELDS + expected_strategy, reference_reply)


@dataclass(frozen=True)
class DialogueRecord:
    line: int
    dialogue_id: str
    split: str
    topic: str
    voice: str
    turns: list[TurnRecord]


@dataclass
class ParsedDialogues:
    dialogues: list[DialogueRecord] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    lines_read: int = 0


def parse_dialogues(stream: BinaryIO, *, max_turns: int) -> ParsedDialogues:
    """Read a dialogue JSONL file line by line; return the valid dialogues and every problem."""
    parsed = ParsedDialogues()
    seen: dict[str, int] = {}
    try:
        for number, line in enumerate(text_lines(stream), start=1):
            if not line.strip():
                continue
            parsed.lines_read += 1
            if parsed.lines_read > MAX_ROWS:
                parsed.errors.append(
                    RowError(0, "", f"The file holds more than {MAX_ROWS:,} dialogues; split it.")
                )
                break
            record, errors = check_dialogue_line(number, line, max_turns=max_turns)
            parsed.errors.extend(errors)
            if record is None:
                continue
            folded = record.dialogue_id.lower()
            if folded in seen:
                parsed.errors.append(
                    RowError(
                        number,
                        "dialogue_id",
                        f"{record.dialogue_id} already appears on line {seen[folded]}.",
                        LINE,
                    )
                )
                continue
            seen[folded] = number
            parsed.dialogues.append(record)
    except FileProblem as problem:
        parsed.errors.append(RowError(0, "", str(problem)))
    if parsed.lines_read == 0 and not parsed.errors:
        parsed.errors.append(RowError(0, "", "The file holds no dialogues."))
    return parsed


def check_dialogue_line(
    number: int, line: str, *, max_turns: int
) -> tuple[DialogueRecord | None, list[RowError]]:
    """Return one line's dialogue normalised, or None and every problem found in it."""
    try:
        value = json.loads(line)
    except RecursionError:
        return None, [RowError(number, "", "is nested too deeply to be a dialogue.", LINE)]
    except ValueError as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
        return None, [RowError(number, "", f"is not valid JSON ({reason}).", LINE)]
    if not isinstance(value, dict):
        return None, [RowError(number, "", "must be one JSON object (a dialogue) per line.", LINE)]
    record = _renamed(value, DIALOGUE_ALIASES)
    errors: list[RowError] = []

    def fail(name: str, message: str) -> None:
        errors.append(RowError(number, name, message, LINE))

    unknown = sorted(set(record) - set(DIALOGUE_KEYS))
    if unknown:
        fail(
            "",
            f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; a dialogue has {', '.join(DIALOGUE_KEYS)}.",
        )
    texts = {name: _text(record.get(name), name, fail) for name in ("dialogue_id", "split", "topic", "voice")}
    dialogue_id = texts["dialogue_id"]
    if not dialogue_id:
        fail("dialogue_id", "is required.")
    elif len(dialogue_id) > MAX_DIALOGUE_ID_CHARS or not EXTERNAL_ID_PATTERN.fullmatch(dialogue_id):
        fail(
            "dialogue_id",
            f"{dialogue_id[:80]!r} is not a usable id: up to {MAX_DIALOGUE_ID_CHARS} letters, digits, '.', '_' "
            "or '-', starting with a letter or digit.",
        )
    for name, limit in (("topic", MAX_TOPIC_CHARS), ("voice", MAX_VOICE_CHARS)):
        if len(texts[name]) > limit:
            fail(name, f"is {len(texts[name])} characters long; the limit is {limit}.")

    turns_value = record.get("turns")
    if not isinstance(turns_value, list) or not turns_value:
        fail("turns", "must be a list of 1 or more turns.")
        return None, errors
    if len(turns_value) > max_turns:
        fail("turns", f"holds {len(turns_value)} turns; a dialogue may hold at most {max_turns}.")
        return None, errors
    turns: list[TurnRecord] = []
    split = ""
    for index, turn_value in enumerate(turns_value, start=1):
        turn, split, turn_errors = _check_turn(number, index, turn_value, dialogue_id or "x", texts["split"])
        errors.extend(turn_errors)
        if turn is not None:
            turns.append(turn)
    if errors:
        return None, errors
    return DialogueRecord(number, dialogue_id, split, texts["topic"], texts["voice"], turns), []


def _check_turn(
    number: int, index: int, value: object, dialogue_id: str, split: str
) -> tuple[TurnRecord | None, str, list[RowError]]:
    where = f"turns[{index}]"
    if not isinstance(value, dict):
        return None, split, [RowError(number, where, "must be an object with the turn's script.", LINE)]
    record = {key: item for key, item in _renamed(value, TURN_ALIASES).items() if key}
    unknown = sorted(set(record) - set(TURN_KEYS))
    errors: list[RowError] = []
    if unknown:
        errors.append(
            RowError(
                number, where, f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}.", LINE
            )
        )
    item_record: dict[str, object] = {
        **{key: record.get(key) for key in TURN_KEYS if key not in ("expected_strategy", "reference_reply")},
        "external_id": Dialogue.turn_external_id(dialogue_id, index),
        "split": split,
    }
    values, item_errors = checked_values(number, item_record, LINE)
    errors.extend(
        RowError(error.row, f"{where}.{error.field}" if error.field else where, error.message, LINE)
        for error in item_errors
    )
    extras: dict[str, str] = {}
    for name, limit in (("expected_strategy", MAX_STRATEGY_CHARS), ("reference_reply", MAX_REPLY_CHARS)):
        text = _text(
            record.get(name),
            f"{where}.{name}",
            lambda field, message: errors.append(RowError(number, field, message, LINE)),
        )
        if len(text) > limit:
            errors.append(
                RowError(
                    number, f"{where}.{name}", f"is {len(text)} characters long; the limit is {limit}.", LINE
                )
            )
        extras[name] = " ".join(text.split()) if name == "expected_strategy" else text
    if not extras["expected_strategy"] and not errors:
        errors.append(
            RowError(
                number,
                f"{where}.expected_strategy",
                "is required (the assistant strategy this turn calls for).",
                LINE,
            )
        )
    if errors or values is None:
        return None, split, errors
    return TurnRecord(index, {**values, **extras}), values["split"], []


def _renamed(value: Mapping[str, object], aliases: Mapping[str, str]) -> dict[str, object]:
    renamed: dict[str, object] = {}
    for key, item in value.items():
        name = "_".join(str(key).strip().lower().replace("-", " ").split())
        renamed[aliases.get(name, name)] = item
    return renamed


def _text(raw: object, name: str, fail: object) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        if "\x00" in raw:
            fail(name, "holds a NUL character (\\0); is the file UTF-16 or binary?")  # type: ignore[operator]
            return ""
        return raw.strip()
    fail(name, f"must be text, not {type(raw).__name__}.")  # type: ignore[operator]
    return ""


def dialogue_line(dialogue: Mapping[str, object]) -> str:
    """Return one export line (the import's own shape, so an export imports back unchanged)."""
    return json_text(dialogue, separators=(",", ":"))
