"""Reading a topic taxonomy file: JSONL, one topic a line, every line checked before anything is stored.

A line is ``{"domain": str, "subcategory": str, "topic": str}`` with optional ``"description"``
(of the topic) and ``"active"`` (default true). The paper's taxonomy has 5 domains, 17
subcategories and 10K+ topics; a file may add to what exists (existing topics are updated, never
duplicated). ``read_taxonomy_lines`` returns the rows or every problem with its line number, so the
import stores all of a file or none of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

NAME_LIMITS = {"domain": 120, "subcategory": 120, "topic": 300}
ALLOWED_KEYS = frozenset({"domain", "subcategory", "topic", "description", "active"})
MAX_LINES = 200_000


@dataclass(frozen=True)
class TaxonomyRow:
    domain: str
    subcategory: str
    topic: str
    description: str = ""
    active: bool = True


def _row(line: str) -> TaxonomyRow | str:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg})"
    if not isinstance(value, dict):
        return "not a JSON object"
    unknown = sorted(set(value) - ALLOWED_KEYS)
    if unknown:
        return f"unknown field(s) {', '.join(unknown)}"
    names: dict[str, str] = {}
    for key, limit in NAME_LIMITS.items():
        name = value.get(key)
        if not isinstance(name, str) or not name.strip():
            return f'"{key}" must be a non-empty text'
        if len(name.strip()) > limit:
            return f'"{key}" is longer than {limit} characters'
        names[key] = " ".join(name.split())
    active = value.get("active", True)
    if not isinstance(active, bool):
        return '"active" must be true or false'
    description = value.get("description", "")
    if not isinstance(description, str):
        return '"description" must be text'
    return TaxonomyRow(names["domain"], names["subcategory"], names["topic"], description.strip(), active)


def read_taxonomy_lines(lines: Iterable[str]) -> tuple[list[TaxonomyRow], list[str]]:
    """Return (rows, problems); problems name their line ("line 3: ...") and any repeated topic."""
    rows: list[TaxonomyRow] = []
    problems: list[str] = []
    seen: dict[tuple[str, str, str], int] = {}
    for number, line in enumerate(lines, start=1):
        if number > MAX_LINES:
            problems.append(f"the file has more than {MAX_LINES} lines; split it")
            break
        if not line.strip():
            continue
        row = _row(line)
        if isinstance(row, str):
            problems.append(f"line {number}: {row}")
            continue
        key = (row.domain.lower(), row.subcategory.lower(), row.topic.lower())
        if key in seen:
            problems.append(f"line {number}: the same topic as line {seen[key]}")
            continue
        seen[key] = number
        rows.append(row)
    if not rows and not problems:
        problems.append("the file holds no topic")
    return rows, problems
