"""The JSONL rows of an output import, parsed without Django (the format is in `importing`).

`output` is a whole answer: EchoChat's <think> format is split into its spans by
`webapp.lib.output_format.parse_output`; any other text is stored as given, as the response. The
separate fields suit systems prompted stage by stage.

A row names its item by `item_id`, or a dialogue's user turn by `dialogue_id` and `turn` (from 1):
the row then knows its turn, and the import finds the turn's item (`OutputRow.item_id` stays ""
until it does).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from webapp.lib.output_format import parse_output, parse_reasoning_fields, parse_strategy_names
from webapp.lib.stored_text import describe, escape_value

AUDIO_EXTENSIONS = ("wav", "mp3", "flac", "ogg", "m4a", "webm")
STAGE_FIELDS = ("perception", "reasoning", "strategy", "response")
KNOWN_FIELDS = frozenset(
    {"item_id", "dialogue_id", "turn", "output", "audio", "history", "harness_metrics", *STAGE_FIELDS}
)
HISTORY_SOURCES = ("gold", "own")
# No dialogue is this long; a larger number is a mistake, not a turn to look up.
MAX_TURN = 99
MAX_DIALOGUE_ID_LENGTH = 60
REASONING_LABELS = {"context": "Context", "latent_need": "Latent need", "core_demand": "Core demand"}
# Deeper JSON than this is no output of any system; refusing it keeps every later walk shallow.
MAX_JSON_DEPTH = 16
_DRIVE = re.compile(r"^[A-Za-z]:")
# The ModelOutput fields a row sets (the import compares them to tell changed outputs).
CONTENT_FIELDS = (
    "raw_text",
    "perception_text",
    "reasoning_text",
    "reasoning_fields",
    "strategy_text",
    "response_text",
    "structured",
    "parse_problems",
    "history",
    "escaped_characters",
    "harness_metrics",
)
# The fields of a row that hold a model's text, escaped where a database would refuse it.
TEXT_FIELDS = (
    "raw_text",
    "perception_text",
    "reasoning_text",
    "reasoning_fields",
    "strategy_text",
    "response_text",
    "parse_problems",
    "history",
)


@dataclass(frozen=True)
class Problem:
    line: int  # 0: about the upload as a whole
    item_id: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "upload"
        return f"{where}{f' ({self.item_id})' if self.item_id else ''}: {self.message}"


@dataclass(frozen=True)
class OutputRow:
    line: int
    item_id: str
    raw_text: str
    perception_text: str
    reasoning_text: str
    reasoning_fields: dict[str, Any]
    strategy_text: str
    response_text: str
    structured: bool
    parse_problems: list[str]
    audio_name: str  # "" when the row names no file
    # A row addressed to a dialogue turn: its dialogue's external id and the turn (1-based).
    dialogue_id: str = ""
    turn: int = 0
    # The history the output was produced with (`ModelOutput.history`); None when not given.
    history: dict[str, Any] | None = None
    # The characters of its text no database stores, in words ("1 NUL character"), escaped
    # reversibly (`webapp.lib.stored_text`); "" when its text is stored as it came.
    escaped_characters: str = ""
    # A harness's own scores of the output ({"voicebench.score": 4.0}), kept beside EchoStudio's.
    harness_metrics: dict[str, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Return how problems name the row: its item id, or its dialogue and turn."""
        return self.item_id or f"{self.dialogue_id} turn {self.turn}"

    def content(self) -> dict[str, Any]:
        """Return the ModelOutput fields this row sets."""
        return {name: getattr(self, name) for name in CONTENT_FIELDS}


def unsafe_path_reason(name: str) -> str | None:
    """Say why a file name from an archive, a bucket listing or a row may not be used (None: it may).

    The one rule for names in output imports: relative, no "..", no NUL or control characters.
    """
    if not name:
        return "an empty file name"
    if any(ord(char) < 32 for char in name):
        return "a file name with a NUL or control character"
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return f"an absolute path ({name!r})"
    if ".." in parts:
        return f"a path that climbs out of its folder ({name!r})"
    return None


def json_problem(value: object) -> str | None:
    """Say why a parsed JSON value may not be stored (too deep), without recursion.

    Characters a database refuses (NUL, lone surrogates) are no reason: the row's text is escaped
    (`escaped_row`)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"nested more than {MAX_JSON_DEPTH} levels deep"
        if isinstance(current, dict):
            stack.extend((key, depth + 1) for key in current)
            stack.extend((item, depth + 1) for item in current.values())
        elif isinstance(current, list):
            stack.extend((item, depth + 1) for item in current)
    return None


def parse_rows(data: bytes) -> tuple[list[OutputRow], list[Problem]]:
    """Return the rows of a JSONL upload and the problems of the lines that are not valid rows."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [Problem(0, "", f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})")]
    rows: list[OutputRow] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if "\x00" in line:
            # JSON allows no raw control character in a string; an escaped one (\u0000) is kept.
            problems.append(Problem(number, "", "not valid JSON (a raw NUL byte; write it as \\u0000)"))
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            problems.append(Problem(number, "", f"not valid JSON ({exc})"))
            continue
        except RecursionError:
            problems.append(Problem(number, "", f"not a row: nested more than {MAX_JSON_DEPTH} levels deep"))
            continue
        if (reason := json_problem(value)) is not None:
            problems.append(Problem(number, "", f"not a row: {reason}"))
            continue
        row_or_problem = _row_from_json(number, value)
        if isinstance(row_or_problem, Problem):
            problems.append(row_or_problem)
            continue
        # Counted in the row as sent: a character the parser copies into two fields is one.
        row = escaped_row(row_or_problem, escape_value(value)[1])
        if row.label in first_line:
            problems.append(
                Problem(number, row.label, f"duplicate item: already on line {first_line[row.label]}")
            )
            continue
        first_line[row.label] = number
        rows.append(row)
    if not rows and not problems:
        problems.append(Problem(0, "", "the file holds no rows"))
    return rows, problems


def escaped_row(row: OutputRow, found: Counter[str]) -> OutputRow:
    """Return the row with its text escaped where a database would refuse it, and flagged with
    `found` (the refused characters of the row as sent) in words.

    Escaped field by field, after parsing: each span is a text of its own, which
    `webapp.lib.stored_text.unescape` gives back whole."""
    changes: dict[str, Any] = {}
    for name in TEXT_FIELDS:
        value = escape_value(getattr(row, name))[0]
        if value is not getattr(row, name):
            changes[name] = value
    if not changes:
        return row
    flag = describe(found) or "text starting with the escape marker"
    return replace(row, **changes, escaped_characters=flag)


def _row_from_json(line: int, value: object) -> OutputRow | Problem:
    if not isinstance(value, dict):
        return Problem(line, "", "a row must be a JSON object")
    address = _address(line, value)
    if isinstance(address, Problem):
        return address
    item_id, dialogue_id, turn = address
    row = _row_at(line, item_id or f"{dialogue_id} turn {turn}", value)
    if isinstance(row, Problem):
        return row
    history = _history(line, row.label, value.get("history"))
    if isinstance(history, Problem):
        return history
    metrics = _harness_metrics(line, row.label, value.get("harness_metrics"))
    if isinstance(metrics, Problem):
        return metrics
    row = replace(row, history=history, harness_metrics=metrics)
    if not dialogue_id:
        return row
    return replace(row, item_id="", dialogue_id=dialogue_id, turn=turn)


def _history(line: int, label: str, value: object) -> dict[str, Any] | Problem | None:
    """Return a row's "history" ({"source", "replies": [{"turn", "reply"}]}) checked, or None."""
    if value is None:
        return None
    problem = Problem(
        line,
        label,
        f'"history" must be {{"source": {" or ".join(HISTORY_SOURCES)}, "replies": [{{"turn": 1, "reply": text}}, ...]}}',
    )
    if not isinstance(value, dict) or set(value) != {"source", "replies"}:
        return problem
    source, replies = value["source"], value["replies"]
    if source not in HISTORY_SOURCES or not isinstance(replies, list):
        return problem
    checked = []
    for position, entry in enumerate(replies, start=1):
        if (
            not isinstance(entry, dict)
            or entry.get("turn") != position
            or not isinstance(entry.get("reply"), str)
        ):
            return problem
        checked.append({"turn": position, "reply": entry["reply"]})
    return {"source": source, "replies": checked}


def _harness_metrics(line: int, label: str, value: object) -> dict[str, float] | Problem:
    """Return a row's "harness_metrics" ({"voicebench.score": 4.0}) checked; {} when not given."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        0 < len(name) <= 64
        and name.isprintable()
        and isinstance(number, int | float)
        and not isinstance(number, bool)
        and math.isfinite(number)
        for name, number in value.items()
    ):
        return Problem(
            line,
            label,
            '"harness_metrics" must be {"name": number, ...} (names printable, at most 64 characters)',
        )
    return {str(name): float(number) for name, number in value.items()}


def _address(line: int, value: Mapping[str, Any]) -> tuple[str, str, int] | Problem:
    """Return (item id, "", 0) or ("", dialogue id, turn): what the row answers."""
    item_id, dialogue_id, turn = value.get("item_id"), value.get("dialogue_id"), value.get("turn")
    if item_id is not None and (dialogue_id is not None or turn is not None):
        return Problem(line, "", 'give either "item_id" or "dialogue_id" and "turn", not both')
    if dialogue_id is None and turn is None:
        if not isinstance(item_id, str) or not item_id.strip():
            return Problem(line, "", 'missing "item_id" (or "dialogue_id" and "turn")')
        return item_id.strip(), "", 0
    if not isinstance(dialogue_id, str) or not dialogue_id.strip():
        return Problem(line, "", '"dialogue_id" must be a dialogue\'s id (text) beside "turn"')
    dialogue_id = dialogue_id.strip()
    if len(dialogue_id) > MAX_DIALOGUE_ID_LENGTH or any(ord(char) < 32 for char in dialogue_id):
        return Problem(
            line, "", f'"dialogue_id" must be at most {MAX_DIALOGUE_ID_LENGTH} printable characters'
        )
    # bool is an int in Python; "turn": true is no turn number.
    if isinstance(turn, bool) or not isinstance(turn, int) or not 1 <= turn <= MAX_TURN:
        return Problem(line, dialogue_id, f'"turn" must be a whole number from 1 to {MAX_TURN}')
    return "", dialogue_id, turn


def _row_at(line: int, item_id: str, value: Mapping[str, Any]) -> OutputRow | Problem:
    """Return the row's content (problems name it by ``item_id``, its label)."""
    unknown = sorted(set(value) - KNOWN_FIELDS)
    if unknown:
        return Problem(line, item_id, f"unknown field(s): {', '.join(unknown)}")
    audio = value.get("audio") or ""
    if not isinstance(audio, str):
        return Problem(line, item_id, '"audio" must be a file name')
    if audio and (reason := unsafe_path_reason(audio)) is not None:
        return Problem(line, item_id, f'"audio" must be a relative file name, not {reason}')
    given_stages = [name for name in STAGE_FIELDS if value.get(name) not in (None, "")]
    if "output" in value and given_stages:
        return Problem(
            line, item_id, f'give either "output" or separate fields, not both ({", ".join(given_stages)})'
        )
    if "output" in value:
        if not isinstance(value["output"], str):
            return Problem(line, item_id, '"output" must be text')
        return _row_from_output_text(line, item_id, value["output"], audio)
    if not given_stages:
        return Problem(line, item_id, 'no output: give "output" or perception/reasoning/strategy/response')
    return _row_from_fields(line, item_id, value, audio)


def _row_from_output_text(line: int, item_id: str, text: str, audio: str) -> OutputRow:
    parsed = parse_output(text)
    structured = any(span is not None for span in (parsed.perception, parsed.reasoning, parsed.strategy))
    if not structured:
        # Free-form answers of other systems are kept as they are; the whole text is the response.
        return OutputRow(line, item_id, text, "", "", {}, "", text.strip(), False, [], audio)
    reasoning = parsed.span_text("reasoning")
    strategy = parsed.span_text("strategy")
    fields: dict[str, Any] = dict(parse_reasoning_fields(reasoning))
    strategies = parse_strategy_names(strategy)
    if strategies:
        fields["strategy"] = strategies
    return OutputRow(
        line,
        item_id,
        text,
        parsed.span_text("perception"),
        reasoning,
        fields,
        strategy,
        parsed.span_text("response"),
        True,
        list(parsed.problems),
        audio,
    )


def _row_from_fields(line: int, item_id: str, value: Mapping[str, Any], audio: str) -> OutputRow | Problem:
    texts: dict[str, str] = {}
    for name in ("perception", "response"):
        field_value = value.get(name) or ""
        if not isinstance(field_value, str):
            return Problem(line, item_id, f'"{name}" must be text')
        texts[name] = field_value

    strategy = value.get("strategy") or ""
    if isinstance(strategy, list) and all(isinstance(name, str) for name in strategy):
        strategy_names, strategy_text = list(strategy), "; ".join(strategy)
    elif isinstance(strategy, str):
        strategy_names, strategy_text = parse_strategy_names(strategy), strategy
    else:
        return Problem(line, item_id, '"strategy" must be text or a list of names')

    reasoning = value.get("reasoning") or ""
    fields: dict[str, Any] = {}
    if isinstance(reasoning, dict):
        if not all(isinstance(part, str | list) for part in reasoning.values()):
            return Problem(line, item_id, '"reasoning" fields must be text or lists')
        fields = dict(reasoning)
        if strategy_names and "strategy" not in fields:
            fields["strategy"] = strategy_names
        # Shown to judges and evaluators as labelled lines, the way EchoChat writes them.
        reasoning_text = "\n".join(
            f"{REASONING_LABELS.get(name, name.replace('_', ' ').capitalize())}: {_as_text(part)}"
            for name, part in reasoning.items()
        )
    elif isinstance(reasoning, str):
        reasoning_text = reasoning
    else:
        return Problem(line, item_id, '"reasoning" must be text or an object of fields')

    return OutputRow(
        line,
        item_id,
        "",
        texts["perception"],
        reasoning_text,
        fields,
        strategy_text,
        texts["response"],
        False,
        [],
        audio,
    )


def _as_text(value: str | list[Any]) -> str:
    return value if isinstance(value, str) else "; ".join(str(part) for part in value)
