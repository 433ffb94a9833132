"""Importing a system's EchoMind answers (JSONL, one object a line), like outputs are imported:

    {"question_id": "...", "answer": "The answer is: [B]"}            a multiple-choice answer
    {"question_id": "...", "import": 3, "answer": "..."}              ... to import 3's question
    {"delivery": "id_1_..._target.wav", "transcript": "..."}          a transcription
    {"delivery": "...", "prompt": "none", "response": "...", "scores": {"c1": 4, ...}}   a reply
    a row of the VoiceBench-style export (`hf_export.write_echomind_voicebench`) with the
    "response" a harness added: a reply (its "prompt_strength", its "response_audio" if any)

Answers are read with `choices.read_choice` (unparseable ones are kept, counted, never guessed);
replies get BLEU-4 and ROUGE-L against the delivery's reference replies when it has some. A reply's
audio, when given, is the file its row names ("audio") or else the released layout's
`<delivery>_response.wav`; it is stored as a clean re-encoding (no tag of its maker kept). A file
with any bad line writes nothing; importing again replaces the system's earlier rows, which are
archived (`webapp.archive.archive_rows`), never deleted: a replaced reply keeps its audio.

Question ids are scoped to the import that brought them (`DeliveryImport`): an id several imports
use must be named with its import ("import": its number; null for a question written on the
questions page), or the file is refused: an answer is never bound to a question it was not given for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q

from annotation.audio.clean import CleanAudio, clean_audio
from annotation.audio.upload import AudioRejected
from evaluation.echomind import layout
from evaluation.echomind.choices import read_choice
from evaluation.echomind.models import Answer, Delivery, Question, Reply, Transcript
from evaluation.echomind.scoring import bleu4, rouge_l
from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from webapp.archive import archive_rows
from webapp.models import User
from webapp.storage import delete_media, new_media_key, save_media

# The job that runs `judge_replies` (evaluation.tasks); the page that starts it names it here too.
JUDGE_REPLIES_JOB = "echomind_judge_replies"

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


def import_answers(
    system: System,
    data: bytes,
    audio: Mapping[str, bytes] | None = None,
    scope: int | None = None,
    actor: User | None = None,
) -> AnswerReport:
    """Store a system's answers, transcripts and replies from JSONL, the replies' audio from `audio`
    (file name -> bytes); refuse the file on any problem. `scope`: the import whose questions the
    rows without an "import" of their own answer (None: the id alone must name one question).
    `actor`: who imported, named on the rows the import archives."""
    questions: dict[str, list[Question]] = {}
    for known in Question.objects.in_use():
        questions.setdefault(known.question_id, []).append(known)
    deliveries = {d.audio_name(): d for d in Delivery.objects.select_related("delivery_set__attribute")}
    answers, transcripts, replies = [], [], []
    problems: list[str] = []
    places: list[str] = []  # where each line came from, when not a line of the upload
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        # EchoMind's own result file (one JSON list), read into the rows below, named by entry.
        converted, problems = layout.answers_from_results(data)
        if problems:
            return AnswerReport(problems=problems)
        places = [f"entry {entry}" for entry, _ in converted]
        data = "\n".join(json.dumps(row) for _, row in converted).encode()
    try:
        lines = data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:
        return AnswerReport(problems=["The file is not UTF-8."])
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = places[number - 1] if places else f"line {number}"
        try:
            row: Any = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"{where}: not JSON")
            continue
        if not isinstance(row, dict):
            problems.append(f"{where}: not a JSON object")
        elif "question_id" in row:
            question = _question_of(questions, row, scope)
            if isinstance(question, str):
                problems.append(f"{where}: {question}")
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
            problems.append(f"{where}: no delivery {row.get('delivery', '')!r}")
        elif "transcript" in row:
            transcripts.append(
                Transcript(system=system, delivery=deliveries[row["delivery"]], text=str(row["transcript"]))
            )
        elif "response" in row:
            reply = _reply(system, deliveries[row["delivery"]], row)
            spoken = _reply_audio(row, audio or {})
            if isinstance(reply, str):
                problems.append(f"{where}: {reply}")
            elif isinstance(spoken, str):
                problems.append(f"{where}: {spoken}")
            else:
                replies.append((reply, spoken))
        else:
            problems.append(f"{where}: needs question_id, transcript or response")
    if problems:
        return AnswerReport(problems=problems)
    stored = []
    for reply, spoken in replies:
        if spoken is not None:
            reply.audio_key = save_media(new_media_key("reply", "wav"), spoken.wav_bytes)
            reply.audio_seconds = spoken.duration_seconds
            stored.append(reply.audio_key)
    try:
        _store(system, answers, transcripts, [reply for reply, _ in replies], actor=actor)
    except BaseException:
        delete_media(*stored)
        raise
    return AnswerReport(len(answers), sum(not a.letter for a in answers), len(transcripts), len(replies))


def _question_of(
    questions: dict[str, list[Question]], row: dict[str, Any], scope: int | None
) -> Question | str:
    """Return the question a row answers, or why it names none (or several)."""
    qid = str(row["question_id"])
    found = questions.get(qid, [])
    where = ""
    if "import" in row or scope is not None:
        wanted = row.get("import", scope)
        if wanted is not None and not isinstance(wanted, int):
            return f"import must be an import's number or null, not {wanted!r}"
        found = [question for question in found if question.source_id == wanted]
        where = f" in import {wanted}" if wanted is not None else " written here"
    if not found:
        return f"no question {qid}{where}"
    if len(found) > 1:
        imports = ", ".join(str(q.source_id) if q.source_id else "written here" for q in found)
        return f'question {qid} is in several imports ({imports}): name one ("import": its number)'
    return found[0]


REPLACED = "replaced by a re-import"


def _store(
    system: System,
    answers: list[Answer],
    transcripts: list[Transcript],
    replies: list[Reply],
    *,
    actor: User | None,
) -> None:
    """Store the rows, archiving the system's earlier ones the file answers again (kept, restorable)."""
    with transaction.atomic():
        earlier_answers = Answer.objects.filter(system=system, question__in=[a.question for a in answers])
        archive_rows(earlier_answers, actor=actor, reason=REPLACED)
        Answer.objects.bulk_create(answers)
        earlier_transcripts = Transcript.objects.filter(
            system=system, delivery__in=[t.delivery for t in transcripts]
        )
        archive_rows(earlier_transcripts, actor=actor, reason=REPLACED)
        Transcript.objects.bulk_create(transcripts)
        replaced = Q()
        for reply in replies:
            replaced |= Q(delivery=reply.delivery, prompt=reply.prompt)
        if replies:
            archive_rows(Reply.objects.filter(replaced, system=system), actor=actor, reason=REPLACED)
        Reply.objects.bulk_create(replies)


def _reply_audio(row: dict[str, Any], audio: Mapping[str, bytes]) -> CleanAudio | str | None:
    """Return the clean audio of a reply row (None when it has none), or the problem with it. A
    row of the VoiceBench-style export run by a harness (it has "audio_sha256") names the delivery
    it heard in "audio"; its reply audio, if any, is in "response_audio"."""
    exported = "audio_sha256" in row
    named = str(row.get("response_audio") or ("" if exported else row.get("audio")) or "")
    name = named or layout.response_name(str(row["delivery"]))
    if name not in audio:
        return f"no audio file {named}" if named else None
    try:
        return clean_audio(audio[name], name)
    except AudioRejected as rejected:
        return rejected.reason


def _reply(system: System, delivery: Delivery, row: dict[str, Any]) -> Reply | str:
    # The VoiceBench-style export's "prompt" is the delivery's text, as VoiceBench names it; its
    # prompt strength is "prompt_strength".
    prompt = str(row["prompt_strength"] if "prompt_strength" in row else row.get("prompt", Reply.Prompt.NONE))
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


# --- C1-C4 and VES through a judge endpoint (the judge configurations and cache of evaluation.judging)

RUBRIC = (
    "You judge one spoken reply to a user's utterance. The user's words are neutral; how they were said "
    "matters. Score 1-5 each: c1 context fit, c2 naturalness, c3 colloquialism, c4 use of the speech "
    "information (the vocal cue below), and ves, vocal empathy of the reply (judge the words when no audio "
    'is attached). Answer with one JSON object: {"c1": n, "c1_reason": "...", "c2": n, "c2_reason": "...", '
    '"c3": n, "c3_reason": "...", "c4": n, "c4_reason": "...", "ves": n}.'
)
JUDGED = ("c1", "c2", "c3", "c4", "ves")


def reply_prompt(script: str, cue: str, reply: str) -> list[dict[str, str]]:
    """Return the judge's messages for one reply (the cue: the delivery's attribute, or neutral)."""
    return [
        {"role": "system", "content": RUBRIC},
        {"role": "user", "content": f"User said: {script}\nVocal cue: {cue}\nReply: {reply}"},
    ]


def judged_scores(data: dict[str, Any] | None) -> dict[str, float] | None:
    """Return the five 1-5 scores of a judge's answer, or None when any is missing or out of range."""
    if data is None:
        return None
    scores = {key: data.get(key) for key in JUDGED}
    if not all(
        isinstance(v, int | float) and not isinstance(v, bool) and 1 <= v <= 5 for v in scores.values()
    ):
        return None
    return {key: float(value) for key, value in scores.items() if isinstance(value, int | float)}


def judge_replies(judge: JudgeConfig) -> tuple[int, int]:
    """Ask the judge for C1-C4 and VES of every reply lacking them (answers cached like every judge
    prompt); return (judged, judge errors). An erroneous answer leaves the reply "not computed"."""
    from evaluation.judging.cache import DatabaseJudgeCache
    from webapp.lib.llm_client import JudgeClient, JudgeRequest

    replies = [
        reply
        for reply in Reply.objects.in_use().select_related("delivery__delivery_set", "delivery__attribute")
        if not all(key in reply.scores for key in JUDGED) and reply.text.strip()
    ]
    requests = [
        JudgeRequest(
            reply.pk,
            reply_prompt(
                reply.delivery.delivery_set.text,
                reply.delivery.attribute.label if reply.delivery.attribute else "neutral delivery",
                reply.text,
            ),
        )
        for reply in replies
    ]
    cache = DatabaseJudgeCache()
    judged = errors = 0
    if judge.offline_heuristic:
        raise ValueError("The offline heuristic scores EchoEval outputs only; choose a judge endpoint.")
    with JudgeClient(judge.client_config(), cache) as client:
        # The pool threads read and write memory only (DatabaseJudgeCache): load and store here.
        cache.prefetch(client.cache_key(request.messages) for request in requests)
        answers = client.judge_many(requests)
        cache.flush()
        for request, answer in zip(requests, answers, strict=True):
            scores = judged_scores(answer.data if answer.ok else None)
            if scores is None:
                errors += 1
                continue
            judged += Reply.objects.add_scores(int(str(request.key)), scores)
    return judged, errors
