"""Judge runs: every applicable stage of a system's outputs scored by one judge configuration.

A run is a job ("judge_run" on the default queue). It works out which (output, stage) pairs the
judge configuration has not judged yet and keeps the judge's `max_concurrency` prompts in flight
from the first to the last (`JudgeClient.judge_stream`: no chunk waits for its slowest prompt;
prompts told to wait by 429/503 and Retry-After wait off the window), building the prompts in
batches as the window asks for them, and stores each answer as a Judgement on arrival. The unique constraint on (output, stage, judge
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

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, TypeVar

from django.db import IntegrityError, transaction

from annotation.gold.models import GoldReference
from evaluation.judging.asking import StagePrompt, ask, judge_listens
from evaluation.judging.cache import DatabaseJudgeCache
from evaluation.judging.dialogues.context import histories_for
from evaluation.judging.heuristic import heuristic_answer
from evaluation.judging.models import JudgeConfig, Judgement, JudgeRun, run_tally
from evaluation.judging.prompts import parse_judgement, prompt_version
from evaluation.judging.rubrics import RESPONSE_AUDIO, RubricError, automatic_flags
from evaluation.judging.stages import applicable_stages, stage_input
from evaluation.outputs.models import ModelOutput, System
from webapp.archive import archive_rows
from webapp.db import refresh_planner_statistics
from webapp.jobs import JobReporter, start_job
from webapp.lib import row_outcome
from webapp.lib.llm_client import JudgeClient, JudgeReply, JudgeRequest
from webapp.lib.progress import Pace
from webapp.models import User
from webapp.storage import read_media

# Errors the judge client reports for a 200 answer that is unusable; every other error means the
# prompt never got an answer (timeout, connection, HTTP status after retries).
ANSWER_ERROR_PREFIXES = (
    "answer is not a JSON object",
    "malformed chat completion",
    "chat completion content is not text",
)


class JudgeRunRefused(Exception):
    """A judge run cannot start (another is active, or the judge has no endpoint)."""


def start_judge_run(
    system: System,
    benchmark_version: str,
    judge_config: JudgeConfig,
    *,
    started_by: User | None,
    retry_errors: bool = False,
) -> JudgeRun:
    """Create a judge run and enqueue its job; refuse while another run of the same triple is active."""
    if (
        not judge_config.effective_base_url
        and not judge_config.offline_heuristic
        and not judge_config.is_ensemble
    ):
        raise JudgeRunRefused(
            f"Judge configuration {judge_config.name!r} has no base URL and ECHOSTUDIO_JUDGE_BASE_URL is unset."
        )
    with transaction.atomic():
        # Locking the system serialises two admins starting the same run: both would otherwise see
        # no active run and send every prompt twice.
        System.objects.select_for_update().get(pk=system.pk)
        if JudgeRun.objects.active_for(system, benchmark_version, judge_config).exists():
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


@dataclass(frozen=True)
class StageTask:
    output_id: int
    stage: str
    scenario: str
    auto_flags: frozenset[str]
    messages: list[dict[str, Any]]
    prompt_key: str
    offline_answer: dict[str, Any] | None = None  # the offline heuristic's answer, computed here
    prompt: StagePrompt | None = None  # what an ensemble's members are asked
    with_history: bool = False  # a dialogue turn: the prompt carries the conversation before it


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
    outputs = (
        ModelOutput.objects.for_version(run.benchmark_version)
        .filter(system_id=run.system_id)
        .annotate(has_gold=GoldReference.objects.current_exists())
        .values_list("pk", "item__scenario", "has_gold")
        .order_by("item__external_id")
    )
    done = set(Judgement.objects.for_run(run).values_list("output_id", "stage"))
    text_only = System.objects.values_list("text_only", flat=True).get(pk=run.system_id)
    listens = judge_listens(run.judge_config)  # the offline heuristic reads text only
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
    if not client_config.base_url and not config.offline_heuristic and not config.is_ensemble:
        raise JudgeRunRefused(f"Judge configuration {config.name!r} has no base URL")
    rejudged = 0
    if run.retry_errors:
        # Errors stored by this very run (an earlier attempt of it) are kept: they were judged once.
        rejudged = archive_rows(
            Judgement.objects.for_run(run).errors().exclude(run=run),
            actor=None,
            reason=f"A judge error judged again by judge run {run.pk}",
        )
    # What earlier runs left that this one will not judge again: said in its result ("a re-run says
    # what it re-did and what it left").
    left_errors = Judgement.objects.for_run(run).errors().exclude(run=run).count()

    pending, no_gold = pending_stages(run)
    counts = RunCounts(to_judge=len(pending), no_gold=no_gold)
    reporter.progress(0.0, f"{len(pending)} stages to judge", force=True)
    where = "computed here, no endpoint" if config.offline_heuristic else f"at {client_config.base_url}"
    reporter.log(f"judge {client_config.model} ({where}): {len(pending)} stages to judge")
    cache = DatabaseJudgeCache()
    with JudgeClient(client_config, cache) as client:
        judging = _StreamJudge(run, client, cache, counts, reporter)
        judging.judge(pending)
    refresh_planner_statistics(ModelOutput, Judgement)
    message = f"Judged {counts.valid + counts.judge_errors} stages, {counts.judge_errors} judge errors"
    rate = judging.pace.per_minute(judging.done)
    if rate is not None:
        message += f" ({rate:,.0f} per minute)"
        reporter.log(f"judged {judging.done} stages at {rate:,.0f} per minute")
    if counts.unreachable:
        message += f"; {counts.unreachable} got no answer (start the run again to judge them)"
    reporter.progress(1.0, message, force=True)
    # The run stands for every stage of its outputs its judge has judged, whichever run stored
    # the judgement: a re-run that judged nothing new over garbage is as failed as the garbage.
    tally = run_tally(run.counts(), counts.unreachable)
    return {
        **counts.as_result(),
        "rejudged_errors": rejudged,
        "left_errors": left_errors,
        row_outcome.RESULT_KEY: tally.as_result(),
    }


# Each report writes the job row (and checks for a cancel) on the thread that stores the answers:
# at 80 answers a second, reporting each would cost the window more than the page gains.
PROGRESS_EVERY_S = 1.0


class _StreamJudge:
    """Feeds the run's prompts to the judge's sliding window and stores each answer on arrival."""

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
        self.answered = 0
        self.unanswered_streak = 0
        # Prompts are built (database reads, response audio) this many at a time, ahead of the window.
        self.batch_size = max(4, client.config.max_concurrency * 4)
        self.tasks: dict[int, StageTask] = {}
        self.pace = Pace(counts.to_judge)
        self.reported_at = 0.0

    def judge(self, pending: Sequence[tuple[int, str]]) -> None:
        requests = self._requests(pending)
        if self.run.judge_config.offline_heuristic:
            for request in requests:
                answer = self.tasks[request.key].offline_answer or {}  # type: ignore[index]
                self._on_results([(request, JudgeReply(True, answer, json.dumps(answer), None, attempts=0))])
        elif self.run.judge_config.is_ensemble:
            # Each member is asked through its own client and the cache, a batch at a time; the
            # median is the answer.
            for batch in _batches(list(requests), self.batch_size):
                prompts = [self.tasks[request.key].prompt for request in batch]  # type: ignore[index]
                answers = ask(self.run.judge_config, [p for p in prompts if p is not None], cache=self.cache)
                self._on_results(
                    [
                        (request, _ensemble_reply(median))
                        for request, median in zip(batch, answers, strict=True)
                    ]
                )
        else:
            self.client.judge_stream(requests, self._on_results)
        if self.done and not self.answered:
            self._refuse(self.done)

    def _requests(self, pending: Sequence[tuple[int, str]]) -> Iterator[JudgeRequest]:
        """Yield the prompts lazily, on the job's thread (the ORM's), a batch built at a time."""
        number = 0
        for batch in _batches(pending, self.batch_size):
            tasks = _build_tasks(batch, self.run.judge_config, self.client)
            self.counts.no_gold += len(batch) - len(tasks)
            # Not judged: gold or output went away since the run began; counted as done for progress.
            self.pace.total -= len(batch) - len(tasks)
            self.cache.prefetch(task.prompt_key for task in tasks)
            for task in tasks:
                number += 1
                self.tasks[number] = task
                yield JudgeRequest(key=number, messages=task.messages)

    def _on_results(self, answers: Sequence[tuple[JudgeRequest, JudgeReply]]) -> None:
        """Store the answers that arrived together, in one commit (each still on its own savepoint)."""
        streak_broken_at = None
        with transaction.atomic():
            # The pool threads cached the answers in memory; store them with the judgements so a
            # crash in between costs nothing on the next attempt.
            self.cache.flush()
            for request, reply in answers:
                task = self.tasks.pop(request.key)  # type: ignore[call-overload]
                if _record(task, reply, self.run, self.cache, self.counts):
                    self.answered += 1
                    self.unanswered_streak = 0
                else:
                    self.unanswered_streak += 1
                    if self.unanswered_streak >= self.batch_size:
                        streak_broken_at = self.unanswered_streak
        self.done += len(answers)
        if streak_broken_at is not None:
            # A judge that went down (or a wrong key) would otherwise be asked every prompt.
            self._refuse(streak_broken_at)
        now = time.monotonic()
        if now - self.reported_at < PROGRESS_EVERY_S and self.done < self.pace.total:
            return
        self.reported_at = now
        self.reporter.progress(
            self.done / max(1, self.pace.total),
            f"Judged {self.done} of {self.pace.total} stages ({self.counts.judge_errors} judge errors)"
            f" · {self.pace.summary(self.done)}",
        )

    def _refuse(self, unanswered: int) -> None:
        raise JudgeRunRefused(
            f"The judge at {self.client.config.base_url} answered none of {unanswered} prompts "
            f"(last error: {self.counts.last_unreachable_error}); stored judgements are kept."
        )


_Row = TypeVar("_Row")


def _ensemble_reply(median: dict[str, Any] | None) -> JudgeReply:
    if median is None:
        return JudgeReply(False, None, "", "no member of the ensemble gave a usable answer", 0)
    return JudgeReply(True, median, json.dumps(median), None, attempts=0)


def _batches(pairs: Sequence[_Row], size: int) -> Iterable[Sequence[_Row]]:
    for start in range(0, len(pairs), size):
        yield pairs[start : start + size]


def _build_tasks(
    chunk: Sequence[tuple[int, str]], config: JudgeConfig, client: JudgeClient
) -> list[StageTask]:
    """Return the prompts of a chunk; outputs removed or without gold since the run began are left out."""
    outputs = ModelOutput.objects.select_related("item").in_bulk({output_id for output_id, _ in chunk})
    golds = GoldReference.objects.current_by_item({output.item_id for output in outputs.values()})
    histories = histories_for(outputs.values())
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
        history = histories.get(output_id)
        prompt = StagePrompt(
            output_id, stage, scenario, inputs.shown, inputs.flag_input, inputs.gold, history
        )
        messages = prompt.messages()
        tasks.append(
            StageTask(
                output_id=output_id,
                stage=stage,
                scenario=scenario,
                auto_flags=frozenset(automatic_flags(stage, inputs.flag_input, gold.tom)),
                messages=messages,
                prompt_key=client.cache_key(messages),
                offline_answer=(
                    heuristic_answer(stage, inputs.shown, inputs.gold) if config.offline_heuristic else None
                ),
                with_history=history is not None,
                prompt=prompt,
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
        prompt_version=prompt_version(task.stage, with_history=task.with_history),
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
