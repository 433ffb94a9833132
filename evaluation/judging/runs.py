"""Judge runs: every applicable stage of a system's outputs scored by one judge configuration.

A run is a job ("judge_run" on the default queue). It works out which (output, stage) pairs the
judge configuration has not judged yet, sends them in chunks with bounded concurrency, and stores
each answer as a Judgement on arrival. The unique constraint on (output, stage, judge
configuration) and that skip make a run resumable: a worker killed mid-run loses only the prompts
in flight, and the next attempt judges only what is missing. Answers are also cached in the
database by prompt, so an answer that arrived but was not stored yet is not paid for again.

What is stored: a valid answer with its sub-scores, flags (the judge's and the ones the app
decided itself), cap and final score; an answer that is not JSON or breaks the rubric as an error
with the raw text (no score: excluded from aggregates, counted). A prompt that never got an answer
(timeouts, HTTP errors after the retries) is not a judgement: it is counted in the job's result and
judged by the next run.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, cast

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef

from annotation.gold.models import GoldReference
from evaluation.judging.models import JudgeCacheEntry, JudgeConfig, Judgement, JudgeRun
from evaluation.judging.prompts import build_messages, parse_judgement, prompt_version
from evaluation.judging.rubrics import (
    EMOTION_SHIFT,
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
    RubricError,
    automatic_flags,
)
from evaluation.outputs.models import ModelOutput, System
from evaluation.results.reports import refresh_planner_statistics
from webapp.jobs import JobReporter, start_job
from webapp.lib.llm_client import JudgeClient, JudgeReply, JudgeRequest
from webapp.models import FINISHED_STATUSES, User
from webapp.storage import read_media

# Errors the judge client reports for a 200 answer that is unusable; every other error means the
# prompt never got an answer (timeout, connection, HTTP status after retries).
ANSWER_ERROR_PREFIXES = (
    "answer is not a JSON object",
    "malformed chat completion",
    "chat completion content is not text",
)
# Perception facts the audio judge compares the voice with.
_AUDIO_GOLD_FIELDS = ("emotion", "emotion_variant", "intensity", "polarity", "prosody_caption")


class JudgeRunRefused(Exception):
    """A judge run cannot start (another is active, or the judge has no endpoint)."""


def applicable_stages(scenario: str, text_only: bool, *, listens: bool = True) -> tuple[str, ...]:
    """Return the rubric stages an output is scored on: shift perception replaces perception on
    emotion-shift items; the audio stage needs speech output and a scorer who hears it (a judge
    without `attach_audio` would score every voice from the same text, so it does not score audio)."""
    perception = SHIFT_PERCEPTION if scenario == EMOTION_SHIFT else PERCEPTION
    stages = (perception, REASONING, RESPONSE_CONTENT)
    return stages if text_only or not listens else (*stages, RESPONSE_AUDIO)


def start_judge_run(
    system: System,
    benchmark_version: str,
    judge_config: JudgeConfig,
    *,
    started_by: User | None,
    retry_errors: bool = False,
) -> JudgeRun:
    """Create a judge run and enqueue its job; refuse while another run of the same triple is active."""
    if not judge_config.effective_base_url:
        raise JudgeRunRefused(
            f"Judge configuration {judge_config.name!r} has no base URL and ECHOSTUDIO_JUDGE_BASE_URL is unset."
        )
    with transaction.atomic():
        # Locking the system serialises two admins starting the same run: both would otherwise see
        # no active run and send every prompt twice.
        System.objects.select_for_update().get(pk=system.pk)
        active = (
            JudgeRun.objects.filter(
                system=system, benchmark_version=benchmark_version, judge_config=judge_config
            )
            .exclude(job__status__in=FINISHED_STATUSES)
            .exclude(job__isnull=True)
        )
        if active.exists():
            raise JudgeRunRefused("A run of this judge on these outputs is still queued or running.")
        run = JudgeRun.objects.create(
            system=system,
            benchmark_version=benchmark_version,
            judge_config=judge_config,
            retry_errors=retry_errors,
            started_by=started_by,
        )
        run.job = start_job(
            "judge_run",
            started_by=started_by,
            parameters={
                "judge_run_id": run.pk,
                "system": system.name,
                "benchmark_version": benchmark_version,
                "judge": judge_config.name,
                "retry_errors": retry_errors,
            },
        )
        run.save(update_fields=["job"])
    return run


class DatabaseJudgeCache:
    """A JudgeCache over JudgeCacheEntry that touches the database only on the thread that made it.

    `JudgeClient.judge_many` consults the cache from its pool threads; Django would open a
    connection per thread and nothing would close them. So pool threads only read and write
    memory: `prefetch` loads a chunk's answers beforehand and `flush` stores new answers, both on
    the owner thread (judge_many calls its result callback there).
    """

    def __init__(self) -> None:
        self._owner = threading.get_ident()
        self._lock = threading.Lock()
        self._known: dict[str, str] = {}
        self._pending: dict[str, str] = {}

    def _on_owner_thread(self) -> bool:
        return threading.get_ident() == self._owner

    def get(self, key: str) -> str | None:
        with self._lock:
            if key in self._known:
                return self._known[key]
        if not self._on_owner_thread():
            return None
        text = JudgeCacheEntry.objects.filter(key=key).values_list("text", flat=True).first()
        if text is not None:
            with self._lock:
                self._known[key] = text
        return text

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._known[key] = value
            self._pending[key] = value
        if self._on_owner_thread():
            self.flush()

    def prefetch(self, keys: Iterable[str]) -> None:
        """Load the stored answers of these prompts into memory (owner thread only)."""
        rows = JudgeCacheEntry.objects.filter(key__in=list(keys)).values_list("key", "text")
        with self._lock:
            self._known.update(rows)

    def flush(self) -> None:
        """Store answers received since the last flush (owner thread only)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if pending:
            JudgeCacheEntry.objects.bulk_create(
                [JudgeCacheEntry(key=key, text=text) for key, text in pending.items()], ignore_conflicts=True
            )

    def forget(self, key: str) -> None:
        """Drop an answer (one that broke the rubric) so that judging it again asks the judge again."""
        with self._lock:
            self._known.pop(key, None)
            self._pending.pop(key, None)
        JudgeCacheEntry.objects.filter(key=key).delete()


@dataclass(frozen=True)
class StageInput:
    shown: str | dict[str, Any]  # what the judge reads as the model output
    flag_input: str | Mapping[str, object] | None  # what automatic_flags inspects
    gold: dict[str, Any]


def stage_input(
    output: ModelOutput, gold: GoldReference, stage: str, audio: tuple[bytes, str] | None = None
) -> StageInput:
    """Return what the judge sees for one stage of an output, and the gold part it is compared with.

    `audio` is (bytes, format) of the response audio when the judge should listen to it.
    """
    # The reference carries what the user said: the judge cannot score understanding without it.
    said = {"user_utterance": output.item.text}
    if stage in (PERCEPTION, SHIFT_PERCEPTION):
        return StageInput(output.perception_text, output.perception_text, {**said, **gold.perception})
    if stage == REASONING:
        parts = [part for part in (output.reasoning_text, output.strategy_text) if part.strip()]
        shown: str | dict[str, Any] = "\n\n".join(parts)
        if not parts and output.reasoning_fields:
            shown = dict(output.reasoning_fields)
        # Field-level flags (missing fields, strategy overlap) need the parsed fields; free text
        # without them is only checked for being empty.
        flag_input: str | Mapping[str, object] | None = output.reasoning_fields or shown or None
        return StageInput(shown, flag_input, {**said, **gold.tom})
    if stage == RESPONSE_CONTENT:
        reference = {**said, **gold.tom}
        if gold.reference_response:
            reference["reference_response"] = gold.reference_response
        return StageInput(output.response_text, output.response_text, reference)
    if stage == RESPONSE_AUDIO:
        audio_gold = {
            **said,
            **{name: gold.perception[name] for name in _AUDIO_GOLD_FIELDS if name in gold.perception},
        }
        shown_audio: dict[str, Any] = {"response_text": output.response_text}
        if audio is not None:
            shown_audio["audio_base64"] = base64.b64encode(audio[0]).decode("ascii")
            shown_audio["audio_format"] = audio[1]
        # No audio at all is unintelligible by definition, whatever the judge makes of the text.
        return StageInput(shown_audio, output.response_audio_key or None, audio_gold)
    raise RubricError(f"unknown stage {stage!r}")


@dataclass(frozen=True)
class StageTask:
    output_id: int
    stage: str
    scenario: str
    auto_flags: frozenset[str]
    messages: list[dict[str, Any]]
    prompt_key: str


@dataclass
class RunCounts:
    to_judge: int = 0
    valid: int = 0
    judge_errors: int = 0
    unreachable: int = 0
    already_judged: int = 0
    no_gold: int = 0
    cached: int = 0
    last_unreachable_error: str = ""

    def as_result(self) -> dict[str, Any]:
        return {
            "to_judge": self.to_judge,
            "valid": self.valid,
            "judge_errors": self.judge_errors,
            "unreachable": self.unreachable,
            "already_judged": self.already_judged,
            "no_gold": self.no_gold,
            "cached": self.cached,
        }


def pending_stages(run: JudgeRun) -> tuple[list[tuple[int, str]], int]:
    """Return the (output id, stage) pairs of the run still to judge, and how many outputs lack gold."""
    current_gold = GoldReference.objects.filter(item_id=OuterRef("item_id"), is_current=True)
    outputs = (
        ModelOutput.objects.filter(system_id=run.system_id, benchmark_version=run.benchmark_version)
        .annotate(has_gold=Exists(current_gold))
        .values_list("pk", "item__scenario", "has_gold")
        .order_by("item__external_id")
    )
    done = set(
        Judgement.objects.filter(
            judge_config_id=run.judge_config_id,
            output__system_id=run.system_id,
            output__benchmark_version=run.benchmark_version,
        ).values_list("output_id", "stage")
    )
    text_only = System.objects.values_list("text_only", flat=True).get(pk=run.system_id)
    listens = JudgeConfig.objects.values_list("attach_audio", flat=True).get(pk=run.judge_config_id)
    pending: list[tuple[int, str]] = []
    no_gold = 0
    for output_id, scenario, has_gold in outputs:
        if not has_gold:
            no_gold += 1
            continue
        pending += [
            (output_id, stage)
            for stage in applicable_stages(scenario, text_only, listens=listens)
            if (output_id, stage) not in done
        ]
    return pending, no_gold


def run_judge_run(run_id: int, reporter: JobReporter) -> dict[str, Any]:
    """Judge what the run still lacks, storing each answer as it arrives; return the counts."""
    run = JudgeRun.objects.select_related("system", "judge_config").filter(pk=run_id).first()
    if run is None:
        return {"skipped": "the judge run no longer exists"}
    config = run.judge_config
    client_config = config.client_config()
    if not client_config.base_url:
        raise JudgeRunRefused(f"Judge configuration {config.name!r} has no base URL")
    if run.retry_errors:
        # Errors stored by this very run (an earlier attempt of it) are kept: they were judged once.
        Judgement.objects.filter(
            judge_config=config,
            output__system_id=run.system_id,
            output__benchmark_version=run.benchmark_version,
        ).exclude(error_kind="").exclude(run=run).delete()

    pending, no_gold = pending_stages(run)
    counts = RunCounts(to_judge=len(pending), no_gold=no_gold)
    reporter.progress(0.0, f"{len(pending)} stages to judge", force=True)
    reporter.log(f"judge {client_config.model} at {client_config.base_url}: {len(pending)} stages to judge")
    cache = DatabaseJudgeCache()
    chunk_size = max(4, client_config.max_concurrency * 4)
    with JudgeClient(client_config, cache) as client:
        judging = _ChunkJudge(run, client, cache, counts, reporter)
        for chunk in _chunks(pending, chunk_size):
            judging.judge(chunk)
    refresh_planner_statistics()
    message = f"Judged {counts.valid + counts.judge_errors} stages, {counts.judge_errors} judge errors"
    if counts.unreachable:
        message += f"; {counts.unreachable} got no answer (start the run again to judge them)"
    reporter.progress(1.0, message, force=True)
    return counts.as_result()


class _ChunkJudge:
    """Sends one chunk of prompts at a time and stores each answer on arrival."""

    def __init__(
        self,
        run: JudgeRun,
        client: JudgeClient,
        cache: DatabaseJudgeCache,
        counts: RunCounts,
        reporter: JobReporter,
    ) -> None:
        self.run, self.client, self.cache, self.counts, self.reporter = run, client, cache, counts, reporter
        self.done = 0

    def judge(self, chunk: Sequence[tuple[int, str]]) -> None:
        tasks = _build_tasks(chunk, self.run.judge_config, self.client)
        self.counts.no_gold += len(chunk) - len(tasks)
        self.cache.prefetch(task.prompt_key for task in tasks)
        answered = 0

        def on_result(request: JudgeRequest, reply: JudgeReply) -> None:
            nonlocal answered
            # The pool thread cached the answer in memory; store it before the judgement so a crash
            # in between costs nothing on the next attempt.
            self.cache.flush()
            if _record(tasks[cast(int, request.key)], reply, self.run, self.cache, self.counts):
                answered += 1
            self.done += 1
            total = self.counts.to_judge
            self.reporter.progress(
                self.done / max(1, total),
                f"Judged {self.done} of {total} stages ({self.counts.judge_errors} judge errors)",
            )

        requests = [JudgeRequest(key=index, messages=task.messages) for index, task in enumerate(tasks)]
        self.client.judge_many(requests, on_result)
        if tasks and not answered:
            # A judge that answers nothing (down, wrong key) would otherwise be asked every prompt.
            raise JudgeRunRefused(
                f"The judge at {self.client.config.base_url} answered none of {len(tasks)} prompts "
                f"(last error: {self.counts.last_unreachable_error}); stored judgements are kept."
            )


def _chunks(pairs: Sequence[tuple[int, str]], size: int) -> Iterator[Sequence[tuple[int, str]]]:
    for start in range(0, len(pairs), size):
        yield pairs[start : start + size]


def _build_tasks(
    chunk: Sequence[tuple[int, str]], config: JudgeConfig, client: JudgeClient
) -> list[StageTask]:
    """Return the prompts of a chunk; outputs removed or without gold since the run began are left out."""
    outputs = ModelOutput.objects.select_related("item").in_bulk({output_id for output_id, _ in chunk})
    golds = {
        gold.item_id: gold
        for gold in GoldReference.objects.filter(
            item_id__in={output.item_id for output in outputs.values()}, is_current=True
        )
    }
    tasks: list[StageTask] = []
    for output_id, stage in chunk:
        output = outputs.get(output_id)
        gold = golds.get(output.item_id) if output is not None else None
        if output is None or gold is None:
            continue
        audio = None
        if stage == RESPONSE_AUDIO and config.attach_audio and output.response_audio_key:
            audio = (
                read_media(output.response_audio_key),
                PurePosixPath(output.response_audio_key).suffix[1:],
            )
        inputs = stage_input(output, gold, stage, audio)
        scenario = output.item.scenario
        messages = build_messages(stage, inputs.shown, inputs.gold, scenario)
        tasks.append(
            StageTask(
                output_id=output_id,
                stage=stage,
                scenario=scenario,
                auto_flags=frozenset(automatic_flags(stage, inputs.flag_input, gold.tom)),
                messages=messages,
                prompt_key=client.cache_key(messages),
            )
        )
    return tasks


def _record(
    task: StageTask, reply: JudgeReply, run: JudgeRun, cache: DatabaseJudgeCache, counts: RunCounts
) -> bool:
    """Store the judge's answer to one task; return False when the prompt got no answer at all."""
    if not reply.ok and not (reply.error or "").startswith(ANSWER_ERROR_PREFIXES):
        counts.unreachable += 1
        counts.last_unreachable_error = reply.error or ""
        return False
    config = run.judge_config
    judgement = Judgement(
        output_id=task.output_id,
        stage=task.stage,
        judge_config=config,
        run=run,
        judge_model=config.effective_model,
        prompt_version=prompt_version(task.stage),
        prompt_key=task.prompt_key,
        auto_flags=sorted(task.auto_flags),
        raw_text=reply.raw_text,
        attempts=reply.attempts,
        cached=reply.cached,
    )
    if reply.data is None:
        judgement.error_kind = Judgement.ErrorKind.INVALID_JSON
        judgement.error = reply.error or "no JSON object"
    else:
        _fill_from_answer(judgement, task, reply.data, cache)
    try:
        with transaction.atomic():
            judgement.save()
    except IntegrityError:
        # Another attempt stored this stage first (a redelivered job overlapping a slow one).
        counts.already_judged += 1
        return True
    if judgement.is_error:
        counts.judge_errors += 1
    else:
        counts.valid += 1
    counts.cached += int(reply.cached)
    return True


def _fill_from_answer(
    judgement: Judgement, task: StageTask, data: dict[str, Any], cache: DatabaseJudgeCache
) -> None:
    subscores, flags = data.get("subscores"), data.get("flags")
    judgement.subscores = subscores if isinstance(subscores, dict) else {}
    judgement.judge_flags = flags if isinstance(flags, list) else []
    judgement.rationale = str(data.get("rationale") or "")
    try:
        score = parse_judgement(task.stage, data, task.scenario, extra_flags=task.auto_flags)
    except RubricError as exc:
        judgement.error_kind = Judgement.ErrorKind.RUBRIC
        judgement.error = str(exc)
        # The same prompt would get the same cached answer; a retry must ask the judge again.
        cache.forget(task.prompt_key)
        return
    judgement.raw_sum = score.raw_sum
    judgement.cap = score.cap
    judgement.cap_reasons = list(score.cap_reasons)
    judgement.score = score.final
