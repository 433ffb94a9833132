"""Importing a system's EchoMind answers (JSONL, one object a line), like outputs are imported:

    {"question_id": "...", "answer": "The answer is: [B]"}            a multiple-choice answer
    {"delivery": "id_1_..._target.wav", "transcript": "..."}          a transcription
    {"delivery": "...", "prompt": "none", "response": "...", "scores": {"c1": 4, ...}}   a reply

Answers are read with `choices.read_choice` (unparseable ones are kept, counted, never guessed);
replies get BLEU-4 and ROUGE-L against the delivery's reference replies when it has some. A file
with any bad line writes nothing; importing again replaces the system's earlier rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from evaluation.echomind.choices import read_choice
from evaluation.echomind.models import Answer, Delivery, Question, Reply, Transcript
from evaluation.echomind.scoring import bleu4, rouge_l
from evaluation.outputs.models import System

SCORE_KEYS = (
    "c1",
    "c2",
    "c3",
    "c4",
    "ves",
    "nisqa",
    "dnsmos",
    "bertscore",
    "similarity",
    "emotion_alignment",
)


@dataclass(frozen=True)
class AnswerReport:
    answers: int = 0
    unparsed: int = 0
    transcripts: int = 0
    replies: int = 0
    problems: list[str] = field(default_factory=list)


def import_answers(system: System, data: bytes) -> AnswerReport:
    """Store a system's answers, transcripts and replies from JSONL; refuse the file on any problem."""
    questions = {q.question_id: q for q in Question.objects.all()}
    deliveries = {d.audio_name(): d for d in Delivery.objects.select_related("delivery_set__attribute")}
    answers, transcripts, replies, problems = [], [], [], []
    try:
        lines = data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:
        return AnswerReport(problems=["The file is not UTF-8."])
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row: Any = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"line {number}: not JSON")
            continue
        if not isinstance(row, dict):
            problems.append(f"line {number}: not a JSON object")
        elif "question_id" in row:
            question = questions.get(str(row["question_id"]))
            if question is None:
                problems.append(f"line {number}: no question {row['question_id']}")
            else:
                text = str(row.get("answer", ""))
                reading = read_choice(text, question.options)
                answers.append(
                    Answer(
                        system=system,
                        question=question,
                        raw_text=text,
                        letter=reading.letter or "",
                        pattern=reading.pattern,
                    )
                )
        elif str(row.get("delivery", "")) not in deliveries:
            problems.append(f"line {number}: no delivery {row.get('delivery', '')!r}")
        elif "transcript" in row:
            transcripts.append(
                Transcript(system=system, delivery=deliveries[row["delivery"]], text=str(row["transcript"]))
            )
        elif "response" in row:
            reply = _reply(system, deliveries[row["delivery"]], row)
            if isinstance(reply, str):
                problems.append(f"line {number}: {reply}")
            else:
                replies.append(reply)
        else:
            problems.append(f"line {number}: needs question_id, transcript or response")
    if problems:
        return AnswerReport(problems=problems)
    with transaction.atomic():
        Answer.objects.filter(system=system, question__in=[a.question for a in answers]).delete()
        Answer.objects.bulk_create(answers)
        Transcript.objects.filter(system=system, delivery__in=[t.delivery for t in transcripts]).delete()
        Transcript.objects.bulk_create(transcripts)
        for reply in replies:
            Reply.objects.filter(system=system, delivery=reply.delivery, prompt=reply.prompt).delete()
        Reply.objects.bulk_create(replies)
    return AnswerReport(len(answers), sum(not a.letter for a in answers), len(transcripts), len(replies))


def _reply(system: System, delivery: Delivery, row: dict[str, Any]) -> Reply | str:
    prompt = str(row.get("prompt", Reply.Prompt.NONE))
    if prompt not in Reply.Prompt.values:
        return f"prompt must be one of {', '.join(Reply.Prompt.values)}"
    given = row.get("scores", {})
    if not isinstance(given, dict):
        return "scores must be an object"
    scores: dict[str, float] = {}
    for key, value in given.items():
        if key not in SCORE_KEYS and key not in ("bleu4", "rouge_l"):
            return f"unknown score {key!r}"
        if not isinstance(value, int | float) or isinstance(value, bool):
            return f"score {key} must be a number"
        scores[key] = float(value)
    text = str(row["response"])
    references = [str(r) for r in (delivery.reference_replies or _case_references(delivery))]
    if references and text.strip():
        scores["bleu4"], scores["rouge_l"] = bleu4(text, references), rouge_l(text, references)
    return Reply(system=system, delivery=delivery, prompt=prompt, text=text, scores=scores)


def _case_references(delivery: Delivery) -> list[str]:
    target = Delivery.objects.filter(
        delivery_set_id=delivery.delivery_set_id, role=Delivery.Role.TARGET
    ).first()
    return list(target.reference_replies) if target and delivery.role == Delivery.Role.TARGET else []
