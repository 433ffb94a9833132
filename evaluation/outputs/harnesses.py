"""Public speech-model harnesses' result files, read as they are written (pure: no Django).

Each reader returns `HarnessRow`s (the reply, how to find its item, the harness's own scores) and
the `Problem`s of the rows that are no reply. The schemas are the harnesses' own, from their code:

- VoiceBench (github.com/MatthewCYM/VoiceBench, ``main.py`` and ``api_judge.py``): JSONL, one row a
  line: the dataset's fields without ``audio`` (``prompt``, and any the exported set adds, such as
  ``item_id`` and ``audio_sha256``), the system's ``response``, and after judging ``score``, a list
  of the judge's answers (``["4"]``, or ``["Yes"]`` for reference questions).
- URO-Bench (github.com/Ruiqi-Yan/URO-Bench, ``metrics/mark_gpt.py``): ``result_<mode>.jsonl``:
  ``{"question", "answer", "reference", "score": ["4", "5", "4"]}`` a line, closed by a summary
  line ``{"final_score": 81.3}``.
- AudioBench (github.com/AudioLLMs/AudioBench, ``src/main_evaluate.py`` and each
  ``src/dataset_src/<dataset>.py``'s ``format_model_predictions``): ``log/<model>/<dataset>.json``,
  one JSON list of ``{"instruction", "reference", "task_type", "model_prediction"}`` (plus any field
  the dataset copies, such as ``item_id``).

A row names its item by ``item_id``, by ``audio_sha256`` (the sha256 of the delivered audio file),
or else by its question text (``prompt`` / ``question`` / ``instruction``) when that is one item's
script; `Placement` does the lookup, the import reports the rows none of them places.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluation.outputs.parsing import Problem, json_problem

ECHOSTUDIO = "echostudio"
VOICEBENCH, UROBENCH, AUDIOBENCH = "voicebench", "urobench", "audiobench"
HARNESS_FORMATS = (VOICEBENCH, UROBENCH, AUDIOBENCH)
FORMAT_CHOICES = (
    (ECHOSTUDIO, "EchoStudio JSONL"),
    (VOICEBENCH, "VoiceBench JSONL (response)"),
    (UROBENCH, "URO-Bench result_*.jsonl (answer, score)"),
    (AUDIOBENCH, "AudioBench <dataset>.json (model_prediction)"),
)


@dataclass(frozen=True)
class _Schema:
    response: str
    question: str
    jsonl: bool  # one object a line; else one JSON list


_SCHEMAS = {
    VOICEBENCH: _Schema("response", "prompt", jsonl=True),
    UROBENCH: _Schema("answer", "question", jsonl=True),
    AUDIOBENCH: _Schema("model_prediction", "instruction", jsonl=False),
}


@dataclass(frozen=True)
class HarnessRow:
    line: int  # the line (JSONL) or the position in the list (JSON), from 1
    item_id: str
    audio_sha256: str
    question: str
    response: str
    # The harness's own scores, named "<harness>.<name>" (kept beside EchoStudio's, never mixed).
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    """How rows find items: by id, by the sha256 of an item's delivered audio, by its script."""

    item_ids: frozenset[str]
    by_audio_sha256: Mapping[str, str]
    by_text: Mapping[str, str]  # script -> item id, only for scripts one item has

    def place(self, row: HarnessRow) -> str | None:
        if row.item_id:
            return row.item_id if row.item_id in self.item_ids else None
        if row.audio_sha256:
            return self.by_audio_sha256.get(row.audio_sha256.lower())  # a shared file places nothing
        return self.by_text.get(normal_text(row.question)) if row.question else None


def normal_text(text: str) -> str:
    """Return a script as rows are matched on it: case and spacing do not matter."""
    return " ".join(text.split()).casefold()


def read_harness(format_name: str, data: bytes) -> tuple[list[HarnessRow], list[Problem]]:
    """Return the replies of a harness's result file and the problems of its rows that are none."""
    schema = _SCHEMAS[format_name]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [Problem(0, "", f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})")]
    values = _jsonl_values(text) if schema.jsonl else _list_values(text)
    if isinstance(values, Problem):
        return [], [values]
    rows: list[HarnessRow] = []
    problems: list[Problem] = []
    for number, value in values:
        if isinstance(value, Problem):
            problems.append(value)
            continue
        row = _row(format_name, schema, number, value)
        if isinstance(row, Problem):
            problems.append(row)
        elif row is not None:
            rows.append(row)
    if not rows and not problems:
        problems.append(Problem(0, "", "the file holds no rows"))
    return rows, problems


def _jsonl_values(text: str) -> list[tuple[int, object]]:
    values: list[tuple[int, object]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except (ValueError, RecursionError) as exc:
            values.append((number, Problem(number, "", f"not valid JSON ({type(exc).__name__})")))
    return values


def _list_values(text: str) -> list[tuple[int, object]] | Problem:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return Problem(0, "", f"not valid JSON ({type(exc).__name__}: {exc})")
    if not isinstance(value, list):
        return Problem(0, "", "an AudioBench result is one JSON list of rows")
    return list(enumerate(value, start=1))


def _row(format_name: str, schema: _Schema, number: int, value: object) -> HarnessRow | Problem | None:
    if not isinstance(value, dict):
        return Problem(number, "", "a row must be a JSON object")
    if (reason := json_problem(value)) is not None:
        return Problem(number, "", f"not a row: {reason}")
    if format_name == UROBENCH and set(value) == {"final_score"}:
        return None  # the file's closing summary, no reply
    response = value.get(schema.response)
    if not isinstance(response, str):
        return Problem(number, "", f'no reply: "{schema.response}" must be text')
    keys: dict[str, str] = {}
    for name in ("item_id", "audio_sha256", schema.question):
        given = value.get(name, "")
        if not isinstance(given, str):
            return Problem(number, "", f'"{name}" must be text')
        keys[name] = given.strip()
    metrics = _scores(format_name, value)
    if isinstance(metrics, str):
        return Problem(number, keys["item_id"], metrics)
    return HarnessRow(number, keys["item_id"], keys["audio_sha256"], keys[schema.question], response, metrics)


def _scores(format_name: str, value: Mapping[str, Any]) -> dict[str, float] | str:
    """Return the row's harness score as a number (the mean of its judge's answers; Yes/No 1/0)."""
    given = value.get("score")
    if given is None:
        return {}
    answers = given if isinstance(given, list) else [given]
    numbers: list[float] = []
    for answer in answers:
        number = _score_number(answer)
        if number is None:
            return f'"score" must hold numbers or Yes/No, not {answer!r}'
        numbers.append(number)
    if not numbers:
        return {}
    return {f"{format_name}.score": sum(numbers) / len(numbers)}


def _score_number(answer: object) -> float | None:
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int | float):
        return float(answer) if math.isfinite(answer) else None
    if not isinstance(answer, str):
        return None
    word = answer.strip().strip(".").casefold()
    if word in ("yes", "no"):
        return 1.0 if word == "yes" else 0.0
    try:
        number = float(word)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def placed_jsonl(rows: list[HarnessRow], placement: Placement) -> tuple[bytes, list[Problem]]:
    """Return the placed rows as EchoStudio JSONL, each on its source line (so every later problem
    names the line of the harness's file), and a problem for each row no item answers to."""
    lines: dict[int, str] = {}
    problems: list[Problem] = []
    for row in rows:
        item_id = placement.place(row)
        if item_id is None:
            problems.append(Problem(row.line, row.item_id, f"not placed: {_unplaced(row)}"))
            continue
        native: dict[str, Any] = {"item_id": item_id, "output": row.response}
        if row.metrics:
            native["harness_metrics"] = row.metrics
        lines[row.line] = json.dumps(native, ensure_ascii=False)
    last = max(lines, default=0)
    # Blank lines are skipped by `parse_rows`, which numbers lines as the harness's file did.
    text = "\n".join(lines.get(number, "") for number in range(1, last + 1))
    return text.encode(), problems


def _unplaced(row: HarnessRow) -> str:
    if row.item_id:
        return f"no item has the id {row.item_id}"
    if row.audio_sha256:
        return "no item's delivered audio (or more than one) has this sha256"
    if row.question:
        return "no item (or more than one) has this question as its script"
    return "the row names no item_id, audio_sha256 or question"
