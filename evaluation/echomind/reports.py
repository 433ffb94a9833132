"""EchoMind results from the database: the records `scoring` and `board` work on, and the board,
breakdowns and delivery effect built from them (so the pages, API and exports agree)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from evaluation.echomind.models import Answer, Delivery, Question, Reply, Transcript
from evaluation.echomind.scoring import (
    GROUPINGS,
    Accuracy,
    AnswerRecord,
    BoardExpectations,
    BoardRow,
    DeliveryEffect,
    DeliveryScore,
    accuracy_by,
    build_board,
    delivery_effects,
)
from evaluation.outputs.models import System


def answer_records() -> list[AnswerRecord]:
    rows = (
        Answer.objects.in_use("question")
        .select_related(
            "system", "question__delivery__delivery_set__attribute", "question__delivery__attribute"
        )
        .order_by("system__name", "question__question_id")
    )
    records = []
    for answer in rows:
        question = answer.question
        case = question.delivery.delivery_set
        records.append(
            AnswerRecord(
                system=answer.system.name,
                question_id=question.question_id,
                level=question.level,
                question_type=question.question_type,
                attribute=case.attribute.code,
                dimension=case.attribute.coarse,
                delivery=question.delivery.role,
                parsed=bool(answer.letter),
                correct=answer.letter == question.answer,
            )
        )
    return records


def delivery_scores() -> list[DeliveryScore]:
    replies = Reply.objects.in_use().select_related("system", "delivery__delivery_set__attribute")
    return [
        DeliveryScore(
            reply.system.name,
            reply.delivery.delivery_set.case_id,
            reply.delivery.delivery_set.attribute.code,
            reply.prompt,
            metric,
            reply.delivery.role,
            float(value),
        )
        for reply in replies
        for metric, value in sorted(reply.scores.items())
    ]


def systems() -> list[str]:
    """Return the systems with any EchoMind answer, transcript or reply, by name."""
    return list(
        System.objects.filter(
            pk__in=[
                *Answer.objects.in_use("question").values_list("system_id", flat=True),
                *Transcript.objects.in_use().values_list("system_id", flat=True),
                *Reply.objects.in_use().values_list("system_id", flat=True),
            ]
        )
        .order_by("name")
        .values_list("name", flat=True)
    )


@dataclass(frozen=True)
class EchoMindResults:
    rows: list[BoardRow]
    breakdowns: dict[str, dict[tuple[str, str], Accuracy]]  # by GROUPINGS name
    effects: list[DeliveryEffect]


def board() -> list[BoardRow]:
    transcripts = [
        (t.system.name, t.delivery.delivery_set.text, t.text)
        for t in Transcript.objects.in_use().select_related("system", "delivery__delivery_set")
    ]
    scores = [(s.system, s.metric, s.value) for s in delivery_scores()]
    return build_board(systems(), answer_records(), transcripts, scores, board_expectations())


def board_expectations() -> BoardExpectations:
    """Return N of the board's figures: every question of each level, the deliveries any system
    transcribed, and the (delivery, prompt) replies any system gave (three queries); archived
    questions, answers, transcripts and replies count nowhere."""
    questions = dict(Question.objects.in_use().order_by().values_list("level").annotate(n=Count("pk")))
    transcribed = Transcript.objects.in_use().order_by().values("delivery_id").distinct().count()
    replied = Reply.objects.in_use().order_by().values("delivery_id", "prompt").distinct().count()
    return BoardExpectations(questions=questions, transcripts=transcribed, replies=replied)


def results() -> EchoMindResults:
    records = answer_records()
    return EchoMindResults(
        rows=board(),
        breakdowns={grouping: accuracy_by(records, grouping) for grouping in GROUPINGS},
        effects=delivery_effects(delivery_scores()),
    )


@dataclass(frozen=True)
class CaseSummary:
    pk: int
    case_id: str
    label: str  # the case's attribute
    deliveries: list[tuple[str, str, str]]  # (role, item id, state)
    questions: int


def delivery_sets_summary() -> list[CaseSummary]:
    """Return each case with its deliveries' states and its number of questions, for the sets page."""
    asked = dict(
        Question.objects.in_use()
        .order_by()
        .values("delivery__delivery_set_id")
        .annotate(n=Count("pk"))
        .values_list("delivery__delivery_set_id", "n")
    )
    summary: dict[int, CaseSummary] = {}
    for delivery in Delivery.objects.select_related("delivery_set__attribute", "item").order_by(
        "delivery_set__case_id", "role"
    ):
        case = delivery.delivery_set
        entry = summary.setdefault(
            case.pk, CaseSummary(case.pk, case.case_id, case.attribute.label, [], asked.get(case.pk, 0))
        )
        entry.deliveries.append((delivery.role, delivery.item.external_id, delivery.item.get_state_display()))
    return list(summary.values())
