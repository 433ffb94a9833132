"""EchoMind's released layout (pure): what its files hold, as this studio reads and writes them.

    script_info_<type>.json   [{"id", "topic", "text", "attribute", "alternative_attribute",
                                "audio": {"target", "neutral", "alternative"}}]  (no neutral for speaker)
    MCQ/understanding.json    [{"question_id", "audio", "question", "options", "answer", "type"}]
    MCQ/reasoning.json        the same, for level 2
    audio/id_<n>_<attribute>_<topic>_<target|neutral|alternative>.wav
    responses/<system>/id_<n>_..._<role>_response.wav   (export only)

Documents are plain lists of dicts; reading one checks it and returns rows or problems.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.echomind.choices import key_problem
from evaluation.echomind.scoring import DELIVERY_ROLES, REASONING, UNDERSTANDING
from webapp.lib.jsonlines import json_line

SCRIPT_INFO = re.compile(r"(?:.*/)?script_info_([A-Za-z0-9_-]+)\.json")
MCQ_FILES = {UNDERSTANDING: "MCQ/understanding.json", REASONING: "MCQ/reasoning.json"}
AUDIO_DIR = "audio/"


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    script_type: str
    topic: str
    text: str
    attribute: str
    alternative_attribute: str
    audio: dict[str, str] = field(default_factory=dict)  # role -> file name (may be empty)


@dataclass(frozen=True)
class QuestionRow:
    question_id: str
    level: str
    audio: str  # the delivery's audio file name
    question: str
    options: list[str]
    answer: str
    question_type: str


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key, "")
    return value.strip() if isinstance(value, str) else ""


def read_script_info(name: str, data: bytes) -> tuple[list[CaseRow], list[str]]:
    """Return the cases of one script_info_<type>.json and its problems."""
    match = SCRIPT_INFO.fullmatch(name)
    if match is None:
        return [], [f"{name}: not a script_info_<type>.json"]
    document = _json_list(name, data)
    if isinstance(document, str):
        return [], [document]
    rows, problems = [], []
    for index, row in enumerate(document):
        where = f"{name} entry {index + 1}"
        audio = row.get("audio", {}) if isinstance(row, dict) else None
        if not isinstance(row, dict) or not isinstance(audio, dict):
            problems.append(f"{where}: an object with an audio object is expected")
            continue
        case = CaseRow(
            case_id=_text(row, "id"),
            script_type=match.group(1),
            topic=_text(row, "topic"),
            text=_text(row, "text"),
            attribute=_text(row, "attribute"),
            alternative_attribute=_text(row, "alternative_attribute"),
            audio={role: str(audio[role]) for role in DELIVERY_ROLES if audio.get(role)},
        )
        missing = [key for key in ("case_id", "text", "attribute") if not getattr(case, key)]
        if missing:
            problems.append(f"{where}: {', '.join(missing)} missing")
        else:
            rows.append(case)
    return rows, problems


def script_info_document(cases: Sequence[CaseRow]) -> list[dict[str, Any]]:
    return [
        {
            "id": case.case_id,
            "topic": case.topic,
            "text": case.text,
            "attribute": case.attribute,
            "alternative_attribute": case.alternative_attribute,
            "audio": dict(case.audio),
        }
        for case in cases
    ]


def read_mcq(level: str, data: bytes) -> tuple[list[QuestionRow], list[str]]:
    """Return the questions of MCQ/<level>.json and its problems (a key must name an option)."""
    name = MCQ_FILES[level]
    document = _json_list(name, data)
    if isinstance(document, str):
        return [], [document]
    rows, problems = [], []
    for index, row in enumerate(document):
        where = f"{name} entry {index + 1}"
        options = row.get("options") if isinstance(row, dict) else None
        if not isinstance(row, dict) or not isinstance(options, list) or not 2 <= len(options) <= 26:
            problems.append(f"{where}: an object with 2 to 26 options is expected")
            continue
        question = QuestionRow(
            question_id=_text(row, "question_id"),
            level=level,
            audio=_text(row, "audio"),
            question=_text(row, "question"),
            options=[str(option) for option in options],
            answer=_text(row, "answer").upper(),
            question_type=_text(row, "type"),
        )
        if not (question.question_id and question.audio and question.question and question.question_type):
            problems.append(f"{where}: question_id, audio, question and type are required")
        elif problem := key_problem(question.options, question.answer):
            problems.append(f"{where}: {problem}")
        else:
            rows.append(question)
    return rows, problems


def mcq_document(questions: Sequence[QuestionRow]) -> list[dict[str, Any]]:
    return [
        {
            "question_id": q.question_id,
            "audio": q.audio,
            "question": q.question,
            "options": list(q.options),
            "answer": q.answer,
            "type": q.question_type,
        }
        for q in questions
    ]


def dumps(document: list[dict[str, Any]]) -> bytes:
    """Return a document as the export writes it (stable: sorted keys, two-space indent)."""
    return json_line(document, indent=2, sort_keys=True).encode()


PREDICTED_ANSWER = re.compile(r"predicted(?:_[a-z0-9]+)*_answer")


def answers_from_results(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """Return EchoMind's own result file as rows of the answers import (`answers.import_answers`).

    EchoMind's scripts write JSON lists: a case as in script_info with its system's replies as
    ``"output_content": {"target": ..., "neutral": ..., "alternative": ...}`` (one a delivery, its
    file named by the case's ``audio`` of the same role), and an MCQ entry with its prediction as
    ``"predicted_answer"`` (or ``predicted_<level>_answer``). Every entry that is neither is a
    problem, named by its position; each row comes with the entry (from 1) it was read from."""
    document = _json_list("the result file", data)
    if isinstance(document, str):
        return [], [document]
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    for index, entry in enumerate(document, start=1):
        where = f"entry {index}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: not a JSON object")
            continue
        predicted = sorted(key for key in entry if PREDICTED_ANSWER.fullmatch(key))
        if "question_id" in entry and predicted:
            rows.append(
                (index, {"question_id": str(entry["question_id"]), "answer": str(entry[predicted[0]])})
            )
            continue
        replies, audio = entry.get("output_content"), entry.get("audio")
        if not isinstance(replies, dict) or not isinstance(audio, dict):
            problems.append(
                f"{where}: neither a case with output_content and audio nor a question with predicted_answer"
            )
            continue
        for role, reply in replies.items():
            if role not in DELIVERY_ROLES or not isinstance(reply, str):
                problems.append(
                    f"{where}: output_content.{role} is no reply of a target/neutral/alternative delivery"
                )
            elif not isinstance(audio.get(role), str) or not audio[role]:
                problems.append(f"{where}: output_content.{role} has no audio.{role} to place it on")
            else:
                delivery = audio[role].rsplit("/", 1)[-1]
                rows.append((index, {"delivery": delivery, "prompt": "none", "response": reply}))
    return rows, problems


def response_name(audio_name: str) -> str:
    return audio_name.removesuffix(".wav") + "_response.wav"


def _json_list(name: str, data: bytes) -> list[Any] | str:
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return f"{name}: not UTF-8 JSON"
    if not isinstance(document, list):
        return f"{name}: a JSON list is expected"
    return document
