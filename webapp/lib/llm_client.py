"""A synchronous client for LLM judges behind any OpenAI-compatible chat-completions endpoint.

`JudgeClient.complete_json(messages)` sends one prompt and returns a `JudgeReply`; it never raises
for a bad answer: HTTP errors, timeouts, garbage and non-JSON content all come back as
`ok=False` with the error and the raw text kept, so the caller can store the judge error and
exclude it from aggregates. 429, 5xx, timeouts and connection errors are retried with
exponential backoff and jitter, honouring Retry-After.

`JudgeClient.judge_stream(requests, on_results)` keeps `max_concurrency` prompts in flight from
the first to the last (a sliding window: a finished request frees its slot for the next at once,
no batch waits for its slowest member), reading the requests lazily so the caller can build them
as it goes. A prompt told to wait (429 or 503 with Retry-After, other retryable failures with
backoff) waits off the window, so the slot serves another prompt meanwhile; each prompt is
answered to `on_results` exactly once. The caller is a Celery task, so the API is synchronous, and
`on_results` (and the reading of `requests`) runs on the caller's own thread so it may use the
Django ORM. `judge_many(requests)` is the same over a list, returning the replies in order.

Answers are cached by sha256 of (model, messages, temperature) through any object with
get(key) / set(key, value) (`JudgeCache`): the same prompt to the same judge model is paid
once. Only answers that parsed as a JSON object are cached, so rerunning a judging job retries
the failures.

With `ChatJudgeConfig(text_replies=True)` the same transport answers in plain text: any text
content is a good answer (`ok`, `data` None) and is cached as such. The endpoint inference job
(`ml.jobs.endpoint_inference`) sends a system's prompts this way; its `cache_scope` (the
endpoint's URL) keeps two servers that call their models by one name from sharing answers.
"""

from __future__ import annotations

import email.utils
import hashlib
import heapq
import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from webapp.lib.outbound import OutboundPolicy

if TYPE_CHECKING:
    import httpx

Message = Mapping[str, Any]
# Besides 5xx: rate limits (429) and the statuses the official openai client also retries
# (408 request timeout, 409 lock conflict).
RETRYABLE_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True)
class ChatJudgeConfig:
    base_url: str  # OpenAI-style, e.g. "https://api.openai.com/v1" or "http://gpu-box:8000/v1" (vLLM)
    model: str
    api_key: str = ""
    timeout_s: float = 60.0
    max_retries: int = 3  # retries after the first attempt
    # Retries of a busy endpoint (429, or 503 with Retry-After) counted apart: it said it works
    # and when to come back, so under a rate limit a prompt waits its turn rather than being lost.
    max_busy_retries: int = 20
    max_concurrency: int = 4
    temperature: float = 0.0
    max_tokens: int | None = None
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0  # also the most a Retry-After header can make us wait
    json_mode: bool = False  # send response_format={"type": "json_object"} (OpenAI, vLLM support it)
    # Every request checked against it and sent to the checked address (webapp.lib.outbound);
    # None only for trusted callers: the command line, where the operator types the URL.
    outbound: OutboundPolicy | None = None
    # Plain-text answers (a system answering, not a judge): any text content is a good reply.
    text_replies: bool = False
    # Part of every cache key when set: answers are shared only under the same scope.
    cache_scope: str = ""


@dataclass(frozen=True)
class JudgeReply:
    ok: bool
    data: dict[str, Any] | None
    raw_text: str
    error: str | None
    attempts: int  # HTTP requests sent for this answer; 0 when it came from the cache
    cached: bool = False
    # The completion's "usage", when the server reports it (0 otherwise, and for cached answers).
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class JudgeRequest:
    key: Hashable  # the caller's id for this prompt (e.g. a model-output pk and stage)
    messages: Sequence[Message]


class JudgeCache(Protocol):
    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...


class InMemoryJudgeCache:
    """A thread-safe dict cache (tests, scripts); the Django side stores answers in the database."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._values.get(key)

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._values[key] = value

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)


def cache_key(model: str, messages: Sequence[Message], temperature: float) -> str:
    """Return the sha256 hex digest identifying a prompt to a judge model."""
    payload = json.dumps(
        {"model": model, "messages": list(messages), "temperature": temperature},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """Return the JSON object that is the whole text, or the first fenced (```json) block; else None."""
    candidates = [text.strip()] + [match.group(1).strip() for match in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


class JudgeClient:
    """One judge endpoint and model; use as a context manager or call close()."""

    def __init__(
        self,
        config: ChatJudgeConfig,
        cache: JudgeCache | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.cache = cache
        self._sleep = sleep
        self._rng = rng or random.Random()
        # httpx is loaded with the first client, not with this module: the web process imports the
        # module for its configuration and reply types and never calls out (17 MiB less a worker).
        import httpx

        from webapp.lib.pinned_http import http_client

        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._http: httpx.Client = http_client(
            config.outbound,
            base_url=config.base_url.rstrip("/") + "/",
            headers=headers,
            timeout=config.timeout_s,
            limits=httpx.Limits(max_connections=max(1, config.max_concurrency)),
        )

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def cache_key(self, messages: Sequence[Message]) -> str:
        scope = self.config.cache_scope
        model = f"{scope}|{self.config.model}" if scope else self.config.model
        return cache_key(model, messages, self.config.temperature)

    def _from_text(self, text: str, attempts: int, cached: bool = False) -> JudgeReply:
        if self.config.text_replies:
            return JudgeReply(True, None, text, None, attempts, cached)
        return _reply_from_text(text, attempts, cached)

    def complete_json(self, messages: Sequence[Message]) -> JudgeReply:
        """Return the judge's answer to one prompt as a JSON object, or the reason it has none."""
        key = self.cache_key(messages)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                return self._from_text(cached, attempts=0, cached=True)
        reply = self._request(messages)
        if reply.ok and self.cache is not None:
            self.cache.set(key, reply.raw_text)
        return reply

    def judge_many(
        self,
        requests: Sequence[JudgeRequest],
        on_result: Callable[[JudgeRequest, JudgeReply], None] | None = None,
    ) -> list[JudgeReply]:
        """Return the replies in request order, with at most max_concurrency prompts in flight.

        `on_result` is called on the calling thread as each answer arrives. Requests with
        identical prompts are sent once and share the reply.
        """
        by_prompt: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            by_prompt.setdefault(self.cache_key(request.messages), []).append(index)
        replies: list[JudgeReply | None] = [None] * len(requests)

        def fan_out(answers: Sequence[tuple[JudgeRequest, JudgeReply]]) -> None:
            for first, reply in answers:
                for index in by_prompt[self.cache_key(first.messages)]:
                    replies[index] = reply
                    if on_result is not None:
                        on_result(requests[index], reply)

        self.judge_stream([requests[indexes[0]] for indexes in by_prompt.values()], fan_out)
        return [reply for reply in replies if reply is not None]

    def judge_stream(
        self,
        requests: Iterable[JudgeRequest],
        on_results: Callable[[Sequence[tuple[JudgeRequest, JudgeReply]]], None],
    ) -> None:
        """Answer every request once, keeping max_concurrency HTTP requests in flight throughout.

        `requests` is read lazily on the calling thread, one request each time a slot is free;
        `on_results` runs on the calling thread with the final answers that arrived together
        (those that came while it last ran), so a caller storing them can commit them at once.
        An exception from either (a cancelled job) stops the stream: prompts not yet sent are
        never sent.
        """
        window = max(1, self.config.max_concurrency)
        source = iter(requests)
        exhausted = False
        in_flight: dict[Future[JudgeReply | _RetryLater], _Prompt] = {}
        waiting: list[tuple[float, int, _Prompt]] = []  # told to retry later: a heap by ready time
        order = itertools.count()
        pool = ThreadPoolExecutor(max_workers=window, thread_name_prefix="judge")
        answers: list[tuple[JudgeRequest, JudgeReply]] = []
        try:
            while True:
                while len(in_flight) < window:
                    prompt: _Prompt | None = None
                    if waiting and waiting[0][0] <= time.monotonic():
                        prompt = heapq.heappop(waiting)[2]
                    elif not exhausted:
                        request = next(source, None)
                        if request is None:
                            exhausted = True
                            continue
                        prompt = _Prompt(request, self._payload(request.messages))
                    if prompt is None:
                        break
                    in_flight[pool.submit(self._try_once, prompt)] = prompt
                if answers:
                    # Stored after the window is full again: no slot idles while the caller commits.
                    on_results(answers)
                    answers = []
                if not in_flight:
                    if not waiting:
                        return
                    # Only prompts told to wait are left: sleep until the first may go again.
                    self._sleep(max(0.0, waiting[0][0] - time.monotonic()))
                    prompt = heapq.heappop(waiting)[2]
                    in_flight[pool.submit(self._try_once, prompt)] = prompt
                    continue
                timeout = max(0.0, waiting[0][0] - time.monotonic()) if waiting else None
                done, _ = wait(in_flight, timeout=timeout, return_when=FIRST_COMPLETED)
                for future in done:
                    prompt = in_flight.pop(future)
                    outcome = future.result()
                    if isinstance(outcome, _RetryLater):
                        ready_at = time.monotonic() + outcome.delay_s
                        heapq.heappush(waiting, (ready_at, next(order), prompt))
                    else:
                        answers.append((prompt.request, outcome))
        finally:
            # Prompts not started yet are dropped; those on the wire finish (within the timeout).
            pool.shutdown(wait=True, cancel_futures=True)

    def _payload(self, messages: Sequence[Message]) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": list(messages),
            "temperature": self.config.temperature,
        }
        if self.config.max_tokens is not None:
            payload["max_tokens"] = self.config.max_tokens
        if self.config.json_mode:
            payload["response_format"] = {"type": "json_object"}
        return payload

    def _try_once(self, prompt: _Prompt) -> JudgeReply | _RetryLater:
        """Answer from the cache, or send one HTTP attempt: the final reply, or when to try again."""
        if prompt.tries.attempts == 0 and self.cache is not None:
            cached = self.cache.get(self.cache_key(prompt.request.messages))
            if cached is not None:
                return self._from_text(cached, attempts=0, cached=True)
        outcome = self._attempt(prompt.payload, prompt.tries)
        if isinstance(outcome, JudgeReply) and outcome.ok and self.cache is not None:
            self.cache.set(self.cache_key(prompt.request.messages), outcome.raw_text)
        return outcome

    def _request(self, messages: Sequence[Message]) -> JudgeReply:
        payload = self._payload(messages)
        tries = _Tries()
        while True:
            outcome = self._attempt(payload, tries)
            if isinstance(outcome, JudgeReply):
                return outcome
            self._sleep(outcome.delay_s)

    def _attempt(self, payload: dict[str, Any], tries: _Tries) -> JudgeReply | _RetryLater:
        """Send one more attempt of a prompt (counted in `tries`): its final reply, or how long to wait."""
        import httpx  # loaded by __init__ already

        from webapp.lib.pinned_http import RefusedByPolicy

        tries.attempts += 1
        attempts = tries.attempts
        busy = False
        retry_after: float | None = None
        try:
            response = self._http.post("chat/completions", json=payload)
        except RefusedByPolicy as exc:
            # No retry mends a refused host: answer at once, before any byte is sent.
            return JudgeReply(False, None, "", f"refused: {exc}", attempts)
        except httpx.TimeoutException as exc:
            error, raw_text = f"timeout after {self.config.timeout_s:g}s ({type(exc).__name__})", ""
        except httpx.TransportError as exc:
            error, raw_text = f"connection error: {type(exc).__name__}: {exc}", ""
        else:
            if response.status_code == 200:
                return _reply_from_body(response.text, attempts, self._from_text)
            error, raw_text = f"HTTP {response.status_code}", response.text
            if not _is_retryable(response.status_code):
                return JudgeReply(False, None, raw_text, error, attempts)
            retry_after = _retry_after_seconds(response.headers.get("Retry-After"))
            busy = response.status_code == 429 or (response.status_code == 503 and retry_after is not None)
        used, allowed = (
            (tries.busy, self.config.max_busy_retries) if busy else (tries.failed, self.config.max_retries)
        )
        if used >= allowed:
            return JudgeReply(False, None, raw_text, f"{error} (gave up after {attempts} attempts)", attempts)
        if busy:
            tries.busy += 1
        else:
            tries.failed += 1
        return _RetryLater(self._backoff(used + 1, retry_after))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.config.backoff_max_s)
        exponential = min(self.config.backoff_base_s * 2 ** (attempt - 1), self.config.backoff_max_s)
        # Full jitter over the upper half keeps concurrent workers from retrying in lockstep.
        return float(exponential * (0.5 + 0.5 * self._rng.random()))


@dataclass
class _Prompt:
    """One request on its way through judge_stream, with the HTTP attempts it has used."""

    request: JudgeRequest
    payload: dict[str, Any]
    tries: _Tries = field(default_factory=lambda: _Tries())


@dataclass
class _Tries:
    """The HTTP attempts of one prompt, and its retries of each kind (busy endpoint, failure)."""

    attempts: int = 0
    busy: int = 0
    failed: int = 0


@dataclass(frozen=True)
class _RetryLater:
    delay_s: float


def _is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or 500 <= status <= 599


def _retry_after_seconds(header: str | None) -> float | None:
    if header is None:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _reply_from_body(body: str, attempts: int, from_text: Callable[[str, int], JudgeReply]) -> JudgeReply:
    """Return the reply for a 200 response: pick the assistant content out of the completion."""
    try:
        completion = json.loads(body)
        content = completion["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return JudgeReply(
            False, None, body, "malformed chat completion (no choices[0].message.content)", attempts
        )
    if not isinstance(content, str):
        return JudgeReply(False, None, body, "chat completion content is not text", attempts)
    reply = from_text(content, attempts)
    usage = completion.get("usage") if isinstance(completion, dict) else None
    if isinstance(usage, dict):
        reply = replace(
            reply,
            prompt_tokens=_token_count(usage.get("prompt_tokens")),
            completion_tokens=_token_count(usage.get("completion_tokens")),
        )
    return reply


def _token_count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _reply_from_text(text: str, attempts: int, cached: bool = False) -> JudgeReply:
    data = extract_json_object(text)
    if data is None:
        return JudgeReply(False, None, text, "answer is not a JSON object", attempts, cached)
    return JudgeReply(True, data, text, None, attempts, cached)
