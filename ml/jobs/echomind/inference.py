"""EchoChat on EchoMind (``ECHOMIND_INFERENCE_JOB``): a checkpoint hears every delivery with an
accepted take and answers each multiple-choice question on it (the question and its lettered
options, asked for "The answer is: [X]", ``choices.choice_prompt``) and, per prompt strength, replies
to the delivery (``taxonomy.conversation_prompt``). Each reply is voiced by the configured TTS.

What the model said is stored exactly as an imported answers file is: the job writes that file
(``evaluation.echomind.answers``) and imports it, so its answers are read by the same documented
patterns, unparseable ones counted and never guessed, and its replies scored like imported ones.
An answer is the model's spoken reply (``InferenceOutput.spoken_reply``: its response span, else
its whole text). It reads the takes as they are when it runs (no snapshot); its result names them.

This module loads torch; only gpu workers import it (through ``ml.jobs.tasks``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evaluation.echomind.answers import import_answers
from evaluation.echomind.choices import choice_prompt
from evaluation.echomind.models import Delivery, Reply
from evaluation.echomind.taxonomy import conversation_prompt
from ml.core.config import INFERENCE_BATCH_SIZE, INFERENCE_MAX_NEW_TOKENS
from ml.core.inference import InferenceItem, run_inference
from ml.core.training_records import read_wav
from ml.jobs.inference import echochat_system, inference_progress, load_answering_model, refuse_foreign_system
from ml.jobs.training.register import stop_if_cancelled
from ml.jobs.voicing import configured_synthesizer, configured_tts, describe_tts, speech_style, voice_texts
from webapp.jobs import JobReporter, JobResult
from webapp.models import Job
from webapp.storage import read_media


@dataclass(frozen=True)
class Task:
    """One thing the model is asked: its input, and the answers-file row its output completes."""

    item: InferenceItem
    row: dict[str, Any]  # {"question_id", "import"} or {"delivery", "prompt"}


def echomind_tasks(prompts: list[str]) -> tuple[list[Task], list[int]]:
    """Return every question on a delivery with an accepted take and, per prompt strength, a reply
    to that delivery, in delivery order; and the takes heard."""
    deliveries = (
        Delivery.objects.filter(item__recording__isnull=False)
        .select_related("item__recording", "delivery_set__attribute")
        .prefetch_related("questions")
        .order_by("delivery_set__case_id", "role")
    )
    tasks: list[Task] = []
    takes: list[int] = []
    for delivery in deliveries:
        take = delivery.item.recording
        assert take is not None  # filtered above
        takes.append(take.pk)
        audio, rate = read_wav(read_media(take.audio_key))
        name = delivery.audio_name()
        for question in delivery.questions.in_use():
            prompt = choice_prompt(question.text, question.options)
            tasks.append(
                Task(
                    InferenceItem(f"question-{question.question_id}", audio, rate, prompt),
                    {"question_id": question.question_id, "import": question.source_id},
                )
            )
        for strength in prompts:
            prompt = conversation_prompt(strength, delivery.delivery_set.attribute.coarse)
            tasks.append(
                Task(
                    InferenceItem(f"reply-{strength}-{name.removesuffix('.wav')}", audio, rate, prompt),
                    {"delivery": name, "prompt": strength},
                )
            )
    return tasks, takes


def run_echomind_inference_job(job: Job, reporter: JobReporter) -> JobResult:
    """Answer and reply to the delivery sets with a checkpoint; store it all under an EchoChat System."""
    parameters = job.parameters
    system_name = str(parameters["system_name"])
    refuse_foreign_system(system_name)
    prompts = [str(prompt) for prompt in parameters.get("prompts") or [Reply.Prompt.NONE]]
    unknown = sorted(set(prompts) - set(Reply.Prompt.values))
    if unknown:
        raise ValueError(f"unknown prompt strengths: {', '.join(unknown)}")
    reporter.progress(0.0, "Reading the deliveries' accepted takes", force=True)
    tasks, takes = echomind_tasks(prompts)
    if not tasks:
        raise ValueError("no EchoMind delivery has an accepted take yet: nothing to answer")
    model = load_answering_model(parameters, reporter)
    questions = sum("question_id" in task.row for task in tasks)
    reporter.log(
        f"EchoMind with {model.uri} on {len(takes)} deliveries: {questions} questions, "
        f"{len(tasks) - questions} replies ({', '.join(prompts)} prompts), {model.device}/{model.dtype}"
    )
    items = [task.item for task in tasks]
    outputs = run_inference(
        model.start.speech_lm,
        items,
        int(parameters.get("max_new_tokens") or INFERENCE_MAX_NEW_TOKENS),
        inference_progress(reporter),
        reporter.should_cancel,
        int(parameters.get("batch_size") or INFERENCE_BATCH_SIZE),
    )
    # A cancelled run answered fewer: importing those would leave the set half answered.
    stop_if_cancelled(len(outputs) < len(items), reporter)
    by_item = {output.item_id: output for output in outputs}
    tts = configured_tts()
    reporter.log(f"Voicing the replies with {describe_tts(tts)}")
    replies = [task for task in tasks if "delivery" in task.row]
    voiced = voice_texts(
        [
            (
                task.item.item_id,
                by_item[task.item.item_id].spoken_reply(),
                speech_style(by_item[task.item.item_id].parsed),
            )
            for task in replies
        ],
        configured_synthesizer(),
        lambda done: reporter.progress(0.9 + 0.05 * done / max(1, len(replies)), f"Voiced {done} replies"),
    )
    if voiced.failures:
        # EchoMind answers are stored as one set (import_answers): a reply without audio stops it.
        raise RuntimeError("; ".join(f"{name}: {reason}" for name, reason in sorted(voiced.failures.items())))
    reporter.progress(0.95, "Storing the answers", force=True)
    lines = []
    for task in tasks:
        said = by_item[task.item.item_id].spoken_reply()
        if "question_id" in task.row:
            lines.append({**task.row, "answer": said})
        else:
            lines.append({**task.row, "response": said, "audio": f"{task.item.item_id}.wav"})
    system = echochat_system(system_name, model)
    audio = {name: voiced.read(name) for name in voiced.names()}
    report = import_answers(system, "\n".join(json.dumps(line) for line in lines).encode(), audio)
    if report.problems:
        raise RuntimeError("; ".join(report.problems[:10]))
    reporter.log(
        f"Stored for {system.name}: {report.answers} answers ({report.unparsed} unparseable), "
        f"{report.replies} replies voiced by {describe_tts(tts)}"
    )
    return {
        "system": system.pk,
        "system_name": system.name,
        "checkpoint": model.checkpoint.pk if model.checkpoint is not None else None,
        "answers": report.answers,
        "unparsed": report.unparsed,
        "replies": report.replies,
        "prompts": prompts,
        "takes": takes,
        "voiced_by": describe_tts(tts),
    }
