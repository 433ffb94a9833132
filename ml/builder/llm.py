"""The build's LLM endpoints: several models mixed, bounded concurrency each, answers paid for once.

``BuildLlm.ask`` is called from a stage's worker threads. It picks an endpoint by a stable hash of
the sample and stage (so a re-run asks the same model), returns a stored answer when this build
already paid for the same prompt (``BuildLlmCall``; two threads asking the same prompt at once ask
it once), and otherwise holds one of the endpoint's
``max_concurrency`` slots while ``JudgeClient`` sends it with retries and backoff. The answer is
stored the moment it arrives, before the sample's result is written: a worker killed mid-batch
costs at most the prompts that were in flight.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ml.builder.config import Endpoint
from ml.builder.models import BuildLlmCall
from webapp.lib.llm_client import (
    ChatJudgeConfig,
    JudgeClient,
    Message,
    extract_json_object,
)
from webapp.outbound import named_key, outbound_policy


@dataclass(frozen=True)
class Answer:
    ok: bool
    data: dict[str, Any]
    error: str
    model: str
    llm_calls: int  # HTTP requests sent (0 when the build had paid for this prompt already)
    prompt_tokens: int
    completion_tokens: int
    seconds: float


def endpoint_client(endpoint: Endpoint, temperature: float = 0.0) -> JudgeClient:
    """Return a client for one configured endpoint, its key read from the environment variable it
    names."""
    return JudgeClient(
        ChatJudgeConfig(
            base_url=endpoint.base_url,
            model=endpoint.model,
            api_key=named_key(endpoint.base_url, endpoint.api_key_env) if endpoint.api_key_env else "",
            timeout_s=endpoint.timeout_s,
            max_retries=endpoint.max_retries,
            max_concurrency=endpoint.max_concurrency,
            temperature=temperature,
            outbound=outbound_policy(),
        )
    )


class BuildLlm:
    """One stage's view of the build's endpoints; use as a context manager."""

    def __init__(
        self, build_id: int, stage: str, endpoints: tuple[Endpoint, ...], temperature: float
    ) -> None:
        self.build_id = build_id
        self.stage = stage
        self.clients = [endpoint_client(endpoint, temperature) for endpoint in endpoints]
        self.slots = [threading.BoundedSemaphore(endpoint.max_concurrency) for endpoint in endpoints]
        # One lock per prompt: two samples of a stage whose prompts are the same (the writer repeats
        # itself) ask once between them; the second waits and reads the stored answer.
        self._prompt_locks: dict[str, threading.Lock] = {}
        self._prompt_locks_guard = threading.Lock()

    @property
    def concurrency(self) -> int:
        """Return how many prompts may be in flight at once over all endpoints."""
        return sum(client.config.max_concurrency for client in self.clients)

    @property
    def models(self) -> list[str]:
        return [client.config.model for client in self.clients]

    def __enter__(self) -> BuildLlm:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every endpoint's HTTP connections."""
        for client in self.clients:
            client.close()

    def _pick(self, chooser: str) -> int:
        digest = hashlib.sha256(f"{self.stage}:{chooser}".encode()).digest()
        return int.from_bytes(digest[:4], "big") % len(self.clients)

    def ask(self, messages: Sequence[Message], chooser: str) -> Answer:
        """Return the JSON answer of one endpoint (chosen by `chooser`, e.g. the sample id)."""
        index = self._pick(chooser)
        client = self.clients[index]
        key = client.cache_key(messages)
        with self._prompt_lock(key):
            stored = (
                BuildLlmCall.objects.filter(build_id=self.build_id, key=key)
                .values_list("answer", flat=True)
                .first()
            )
            if stored is not None:
                return Answer(True, extract_json_object(stored) or {}, "", client.config.model, 0, 0, 0, 0.0)
            with self.slots[index]:
                started = time.monotonic()
                reply = client.complete_json(messages)
                seconds = time.monotonic() - started
            if reply.ok:
                BuildLlmCall.objects.bulk_create(
                    [
                        BuildLlmCall(
                            build_id=self.build_id,
                            key=key,
                            stage=self.stage,
                            model=client.config.model,
                            answer=reply.raw_text,
                            prompt_tokens=reply.prompt_tokens,
                            completion_tokens=reply.completion_tokens,
                            seconds=seconds,
                        )
                    ],
                    ignore_conflicts=True,
                )
        return Answer(
            reply.ok,
            reply.data or {},
            reply.error or "",
            client.config.model,
            reply.attempts,
            reply.prompt_tokens,
            reply.completion_tokens,
            seconds,
        )

    def _prompt_lock(self, key: str) -> threading.Lock:
        with self._prompt_locks_guard:
            return self._prompt_locks.setdefault(key, threading.Lock())
