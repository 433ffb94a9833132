"""Inference on an existing serving engine: a System that is an OpenAI-compatible chat endpoint
taking audio (``input_audio`` content parts), e.g. vLLM serving a Qwen2.5-Omni thinker checkpoint
on its own GPUs, or a hosted audio model. Torch-free: it runs on the default queue, on any worker.

The job answers what the in-process job (``ml.jobs.inference``) answers: the snapshot's single
items, or with ``dialogue_history`` ("gold" or "own", ``ml.core.config.HISTORY_MODES``) its
dialogue turns, each turn sent with the earlier turns' user audio and the gold replies or the
endpoint's own spoken replies (``ml.core.answers.spoken_reply``). One request per take::

    [system prompt]
    user:      [input_audio turn 1]        assistant: reply 1      (earlier turns, oldest first)
    user:      [input_audio this turn, text: the instruction]

The audio is the take's, as a base64 16-bit WAV. The outputs are stored as the in-process ones
are (``ml.jobs.answers.store_answers``: voiced, imported, each turn with its ``history``).

Transport is the judges' (``webapp.lib.llm_client.JudgeClient`` in its text-reply mode): a sliding
window of ``max_concurrency`` requests, 429/503 Retry-After waits off the window, backoff, the
outbound policy (the URL is checked on every call; a key named by an ECHOSTUDIO_JUDGE_KEY_*
variable goes only to the host the operator bound it to), and the answer cache in the database
(``evaluation.judging.cache``), scoped to the endpoint's URL. The cache makes the job resumable:
an answer is flushed to the database as it arrives, so a job re-run after a worker died, or after
prompts got no answer, asks the endpoint only what it has not answered yet, and the outputs are
imported once, when every take has its answer (an import of part would remove the rest).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.judging.cache import DatabaseJudgeCache
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, System
from ml.core.answers import InferenceOutput, dialogue_turn_rows, spoken_reply
from ml.core.config import HISTORY_GOLD, HISTORY_MODES, INFERENCE_MAX_NEW_TOKENS
from ml.core.training_records import RecordAudio, wav_bytes
from ml.jobs.answers import refuse_foreign_system, spoken_system, store_answers
from ml.jobs.datasets import snapshot_records
from ml.jobs.training.register import job_snapshot
from ml.jobs.voicing import configured_synthesizer, configured_tts, describe_tts
from webapp.jobs import JobReporter, JobResult
from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient, JudgeReply, JudgeRequest
from webapp.lib.output_format import parse_output
from webapp.lib.progress import Pace
from webapp.models import Job
from webapp.outbound import check_outbound_url, named_key, outbound_policy

DEFAULT_CONCURRENCY = 8
# Each report writes the job row (and checks for a cancel): at most once a second.
PROGRESS_EVERY_S = 1.0


class EndpointUnanswered(Exception):
    """Prompts got no answer (after the retries): nothing is stored; a re-run asks only those."""


def endpoint_config(parameters: dict[str, Any]) -> ChatJudgeConfig:
    """Return the client configuration of the job's endpoint (parameters as ``ml.jobs.launch``
    documents); raise OutboundRefused when the URL, or the key for it, is not allowed."""
    url = str(parameters["endpoint_url"]).strip()
    check_outbound_url(url)
    variable = str(parameters.get("key_variable") or "")
    max_tokens = parameters.get("max_tokens")
    return ChatJudgeConfig(
        base_url=url,
        model=str(parameters["model"]),
        api_key=named_key(url, variable) if variable else "",
        timeout_s=float(parameters.get("timeout_s") or 300.0),
        max_concurrency=int(parameters.get("max_concurrency") or DEFAULT_CONCURRENCY),
        temperature=float(parameters.get("temperature") or 0.0),
        max_tokens=int(max_tokens) if max_tokens else INFERENCE_MAX_NEW_TOKENS,
        outbound=outbound_policy(),
        text_replies=True,
        cache_scope=url,
    )


def audio_part(samples: Any, sample_rate: int) -> dict[str, Any]:
    """Return an OpenAI ``input_audio`` content part holding the audio as a base64 WAV."""
    data = base64.b64encode(wav_bytes(samples, sample_rate)).decode("ascii")
    return {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}


def turn_messages(row: RecordAudio, replies: Sequence[str], system_prompt: str = "") -> list[dict[str, Any]]:
    """Return the chat messages of one take: the earlier turns (their user audio, then `replies`,
    one per earlier turn) and this take's audio with the instruction."""
    if len(replies) != len(row.history_audio):
        raise ValueError(
            f"{row.record.item_id}: {len(replies)} replies for {len(row.history_audio)} earlier turns"
        )
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for (samples, rate), reply in zip(row.history_audio, replies, strict=True):
        messages.append({"role": "user", "content": [audio_part(samples, rate)]})
        messages.append({"role": "assistant", "content": reply})
    messages.append(
        {
            "role": "user",
            "content": [audio_part(row.audio, row.sample_rate), {"type": "text", "text": row.record.prompt}],
        }
    )
    return messages


@dataclass(frozen=True)
class _Take:
    row: RecordAudio
    replies: tuple[str, ...]  # the earlier turns' replies it is sent with


class _EndpointAnswers:
    """Sends takes through the client's sliding window; keeps each answer, reports progress."""

    def __init__(
        self,
        client: JudgeClient,
        cache: DatabaseJudgeCache,
        reporter: JobReporter,
        total: int,
        system_prompt: str,
    ) -> None:
        self.client, self.cache, self.reporter = client, cache, reporter
        self.system_prompt = system_prompt
        self.pace = Pace(total)
        self.outputs: dict[str, InferenceOutput] = {}
        self.unanswered: dict[str, str] = {}  # item id: the last error
        self.cached = 0
        self.requests_sent = 0
        self.reported_at = 0.0
        self.batch_size = max(4, client.config.max_concurrency * 4)

    @property
    def done(self) -> int:
        return len(self.outputs) + len(self.unanswered)

    def answer(self, takes: Sequence[_Take]) -> None:
        """Answer every take once (those answered already are not sent)."""
        by_id = {take.row.record.item_id: take for take in takes}
        self.client.judge_stream(
            self._requests(list(by_id.values())), lambda answers: self._keep(by_id, answers)
        )

    def _requests(self, takes: Sequence[_Take]) -> Iterator[JudgeRequest]:
        """Yield the requests lazily (the window asks), a batch's stored answers loaded beforehand."""
        for start in range(0, len(takes), self.batch_size):
            batch = [
                JudgeRequest(
                    take.row.record.item_id, turn_messages(take.row, take.replies, self.system_prompt)
                )
                for take in takes[start : start + self.batch_size]
            ]
            self.cache.prefetch(self.client.cache_key(request.messages) for request in batch)
            yield from batch

    def _keep(self, takes: dict[str, _Take], answers: Sequence[tuple[JudgeRequest, JudgeReply]]) -> None:
        # Answers the pool threads cached in memory are stored now: a worker dying after this
        # costs them nothing on the next attempt.
        self.cache.flush()
        for request, reply in answers:
            item_id = str(request.key)
            self.requests_sent += reply.attempts
            if not reply.ok:
                self.unanswered[item_id] = reply.error or "no answer"
                continue
            self.cached += int(reply.cached)
            text = reply.raw_text
            self.outputs[item_id] = InferenceOutput(item_id, text, parse_output(text), takes[item_id].replies)
        now = time.monotonic()
        if now - self.reported_at < PROGRESS_EVERY_S and self.done < self.pace.total:
            return
        self.reported_at = now
        self.reporter.metric(self.done, answered=len(self.outputs), unanswered=len(self.unanswered))
        # Raises JobCancelled when an admin asked to stop: prompts not sent yet are never sent.
        self.reporter.progress(
            0.05 + 0.85 * self.done / max(1, self.pace.total),
            f"Answered {len(self.outputs)} of {self.pace.total} takes"
            + (f" ({len(self.unanswered)} without an answer)" if self.unanswered else "")
            + f" · {self.pace.summary(self.done)}",
        )


def _refuse_unanswered(answers: _EndpointAnswers, base_url: str) -> None:
    if answers.unanswered:
        item_id, error = next(iter(answers.unanswered.items()))
        raise EndpointUnanswered(
            f"{len(answers.unanswered)} takes got no answer from {base_url} (e.g. {item_id}: {error}); "
            f"nothing was stored. The {len(answers.outputs)} answers received are kept: start the job "
            "again to ask only the rest."
        )


def endpoint_system(name: str, category: str, config: ChatJudgeConfig) -> System:
    """Return the system of that name (made when new, of `category`), spoken, its version the endpoint's."""
    return spoken_system(name, category, f"{config.model} at {config.base_url}")


def run_endpoint_inference_job(job: Job, reporter: JobReporter) -> JobResult:
    """Send every take of the snapshot to the endpoint; store the answers as a System's outputs."""
    parameters = job.parameters
    snapshot = job_snapshot(job)
    system_name = str(parameters["system_name"])
    category = str(parameters.get("system_category") or System.Category.OURS)
    version = parameters.get("benchmark_version") or DEFAULT_BENCHMARK_VERSION
    refuse_foreign_system(system_name, category)
    history_mode = str(parameters.get("dialogue_history") or "")
    if history_mode and history_mode not in HISTORY_MODES:
        raise ValueError(f"unknown dialogue history mode {history_mode!r}")
    config = endpoint_config(parameters)
    reporter.progress(0.0, "Reading the dataset snapshot", force=True)
    rows = snapshot_records(snapshot)
    dialogues = dialogue_turn_rows(rows) if history_mode else []
    singles = [] if history_mode else [row for row in rows if not row.record.dialogue_id]
    total = sum(len(dialogue) for dialogue in dialogues) if history_mode else len(singles)
    if not total:
        wanted = "dialogue turn" if history_mode else "single item (dialogue turns need a dialogue run)"
        raise ValueError(f"snapshot #{snapshot.pk} holds no {wanted} to answer")
    shape = (
        f"{total} turns of {len(dialogues)} dialogues ({history_mode} history)"
        if history_mode
        else f"{total} items"
    )
    reporter.log(
        f"Endpoint inference with {config.model} at {config.base_url} on {shape} of snapshot #{snapshot.pk}, "
        f"{config.max_concurrency} requests in flight"
    )
    system_prompt = str(parameters.get("system_prompt") or "")
    cache = DatabaseJudgeCache()
    with JudgeClient(config, cache) as client:
        answers = _EndpointAnswers(client, cache, reporter, total, system_prompt)
        if not history_mode:
            answers.answer([_Take(row, ()) for row in singles])
        else:
            # Turn k of a dialogue waits for its turn k-1 ("own" history feeds that answer back);
            # the turns at one position of every dialogue share the window.
            for position in range(max(len(dialogue) for dialogue in dialogues)):
                takes = [
                    _Take(dialogue[position], _replies(dialogue, position, history_mode, answers.outputs))
                    for dialogue in dialogues
                    if position < len(dialogue)
                ]
                answers.answer(takes)
                _refuse_unanswered(answers, config.base_url)
    _refuse_unanswered(answers, config.base_url)
    rate = answers.pace.per_minute(answers.done)
    reporter.log(
        f"{len(answers.outputs)} answers ({answers.cached} from the cache, {answers.requests_sent} requests sent)"
        + (f" at {rate:,.0f} per minute" if rate is not None else "")
    )
    ordered = [
        answers.outputs[row.record.item_id]
        for row in ([row for dialogue in dialogues for row in dialogue] if history_mode else singles)
    ]
    tts = configured_tts()
    system = endpoint_system(system_name, category, config)
    stored = store_answers(
        reporter, system, version, ordered, history_mode, configured_synthesizer(), describe_tts(tts)
    )
    return {
        **stored,
        "endpoint": config.base_url,
        "model": config.model,
        "cached": answers.cached,
        "requests": answers.requests_sent,
        "per_minute": round(rate, 1) if rate is not None else None,
        "dialogues": len(dialogues),
    }


def _replies(
    dialogue: Sequence[RecordAudio], position: int, history_mode: str, outputs: dict[str, InferenceOutput]
) -> tuple[str, ...]:
    """Return the replies turn `position` is sent with: the gold replies its record carries, or the
    endpoint's own spoken replies to the earlier turns."""
    row = dialogue[position]
    if history_mode == HISTORY_GOLD:
        return tuple(turn.reply for turn in row.record.history)
    earlier = [outputs[turn.record.item_id] for turn in dialogue[:position]]
    return tuple(spoken_reply(output.parsed, output.raw_text) for output in earlier)
