"""The judge client's sliding window: busy answers (429, 503 with Retry-After) wait off the window
and are retried apart from failures, and every prompt is answered exactly once."""

import random
import threading
from collections import Counter

from tests.support.fake_chat_server import (
    RecordedRequest,
    Reply,
    json_reply,
    running_chat_server,
    status_reply,
)
from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient, JudgeReply, JudgeRequest


def _client(server, **overrides) -> JudgeClient:
    config = ChatJudgeConfig(base_url=server.base_url, model="judge-model", timeout_s=5.0, **overrides)
    return JudgeClient(config, rng=random.Random(0))


def _prompt(request: RecordedRequest) -> str:
    assert isinstance(request.json, dict)
    return request.json["messages"][-1]["content"]


def test_a_busy_endpoint_is_waited_for_beyond_the_failure_retries() -> None:
    busy_left = Counter({"p0": 5})  # five 429/503 answers in a row for one prompt
    lock = threading.Lock()

    def endpoint(request: RecordedRequest) -> Reply:
        prompt = _prompt(request)
        with lock:
            if busy_left[prompt]:
                busy_left[prompt] -= 1
                return status_reply(429 if busy_left[prompt] % 2 else 503, retry_after=0.01)
        return json_reply({"prompt": prompt})

    requests = [JudgeRequest(n, [{"role": "user", "content": f"p{n}"}]) for n in range(3)]
    answered: list[tuple[object, JudgeReply]] = []
    with running_chat_server(endpoint) as server, _client(server, max_retries=1) as client:
        client.judge_stream(requests, lambda answers: answered.extend((r.key, reply) for r, reply in answers))
    assert sorted(str(key) for key, _ in answered) == ["0", "1", "2"]
    replies = dict(answered)
    assert replies[0].ok and replies[0].attempts == 6
    assert len(server.chat_requests) == 6 + 2


def test_a_prompt_told_to_wait_frees_its_slot_for_the_others() -> None:
    # One slot: p0 is told to come back in 1 s; meanwhile p1..p4 go through the same slot.
    told = threading.Event()

    def endpoint(request: RecordedRequest) -> Reply:
        if _prompt(request) == "p0" and not told.is_set():
            told.set()
            return status_reply(429, retry_after=1)
        return json_reply({"prompt": _prompt(request)})

    requests = [JudgeRequest(n, [{"role": "user", "content": f"p{n}"}]) for n in range(5)]
    order: list[object] = []
    with running_chat_server(endpoint) as server, _client(server, max_concurrency=1) as client:
        client.judge_stream(requests, lambda answers: order.extend(r.key for r, _ in answers))
    assert order == [1, 2, 3, 4, 0]
    assert server.max_in_flight == 1
    first, retried = [r for r in server.chat_requests if _prompt(r) == "p0"]
    assert retried.received_at - first.received_at >= 1.0  # Retry-After honoured


def test_failures_still_give_up_after_max_retries() -> None:
    with (
        running_chat_server(lambda _request: status_reply(500)) as server,
        _client(server, max_retries=1, backoff_base_s=0.01) as client,
    ):
        replies = client.judge_many([JudgeRequest("a", [{"role": "user", "content": "x"}])])
    assert (replies[0].ok, replies[0].attempts) == (False, 2)
    assert "gave up after 2 attempts" in (replies[0].error or "")
