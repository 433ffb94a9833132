import json
import random
import socket
import threading

from tests.support.fake_chat_server import (
    chat_reply,
    json_reply,
    raw_reply,
    running_chat_server,
    status_reply,
)
from webapp.lib.llm_client import (
    ChatJudgeConfig,
    InMemoryJudgeCache,
    JudgeClient,
    JudgeRequest,
    cache_key,
)

MESSAGES = [{"role": "system", "content": "Score it."}, {"role": "user", "content": "output"}]
JUDGEMENT = {"subscores": {"content": 4}, "flags": [], "rationale": "warm and on point"}


def _client(server, sleeps=None, cache=None, **overrides):
    config = ChatJudgeConfig(
        base_url=server.base_url,
        model="judge-model",
        api_key="secret-key",
        timeout_s=overrides.pop("timeout_s", 5.0),
        max_retries=overrides.pop("max_retries", 3),
        **overrides,
    )
    return JudgeClient(
        config,
        cache=cache,
        sleep=(sleeps.append if sleeps is not None else lambda _seconds: None),
        rng=random.Random(0),
    )


def test_good_answer():
    with running_chat_server([json_reply(JUDGEMENT)]) as server, _client(server) as client:
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.data, reply.error, reply.attempts, reply.cached) == (
        True,
        JUDGEMENT,
        None,
        1,
        False,
    )
    (request,) = server.chat_requests
    assert request.json == {"model": "judge-model", "messages": MESSAGES, "temperature": 0.0}
    assert request.headers["Authorization"] == "Bearer secret-key"


def test_json_in_a_fenced_block_is_extracted():
    content = 'Here is my judgement:\n```json\n{"subscores": {"audio": 3}, "flags": []}\n```\nThanks.'
    with running_chat_server([chat_reply(content)]) as server, _client(server) as client:
        reply = client.complete_json(MESSAGES)
    assert reply.ok
    assert reply.data == {"subscores": {"audio": 3}, "flags": []}
    assert reply.raw_text == content


def test_garbage_is_an_error_that_keeps_the_raw_text_and_is_not_retried():
    with (
        running_chat_server([chat_reply("I would say 7/10, quite empathetic.")]) as server,
        _client(server) as client,
    ):
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.data, reply.attempts) == (False, None, 1)
    assert reply.raw_text == "I would say 7/10, quite empathetic."
    assert "not a JSON object" in (reply.error or "")


def test_a_json_list_is_not_a_judgement():
    with running_chat_server([chat_reply("[1, 2]")]) as server, _client(server) as client:
        assert not client.complete_json(MESSAGES).ok


def test_a_non_completion_body_is_an_error_with_the_body_kept():
    with running_chat_server([raw_reply(200, "<html>gateway</html>")]) as server, _client(server) as client:
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.raw_text) == (False, "<html>gateway</html>")
    assert "malformed" in (reply.error or "")


def test_429_then_success_honours_retry_after():
    sleeps: list[float] = []
    script = [status_reply(429, retry_after=2), json_reply(JUDGEMENT)]
    with running_chat_server(script) as server, _client(server, sleeps) as client:
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.attempts) == (True, 2)
    assert sleeps == [2.0]
    assert len(server.chat_requests) == 2


def test_5xx_backs_off_exponentially_with_jitter_then_gives_up():
    sleeps: list[float] = []
    script = [status_reply(500), status_reply(502), status_reply(503)]
    with running_chat_server(script) as server, _client(server, sleeps, max_retries=2) as client:
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.attempts) == (False, 3)
    assert "HTTP 503" in (reply.error or "")
    assert "fake status 503" in reply.raw_text
    # base 1 s: the first wait is in [0.5, 1], the second in [1, 2]
    assert len(sleeps) == 2
    assert 0.5 <= sleeps[0] <= 1.0
    assert 1.0 <= sleeps[1] <= 2.0


def test_client_errors_are_not_retried():
    with running_chat_server([status_reply(400, message="bad model")]) as server, _client(server) as client:
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.attempts) == (False, 1)
    assert "bad model" in reply.raw_text


def test_timeout_is_retried_then_reported():
    script = [json_reply(JUDGEMENT, delay_s=3), json_reply(JUDGEMENT, delay_s=3)]
    with running_chat_server(script) as server, _client(server, timeout_s=0.2, max_retries=1) as client:
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.attempts, reply.raw_text) == (False, 2, "")
    assert "timeout" in (reply.error or "")
    assert len(server.chat_requests) == 2


def test_connection_refused_is_reported():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = ChatJudgeConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1)
    with JudgeClient(config, sleep=lambda _seconds: None) as client:
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.attempts) == (False, 2)
    assert "connection error" in (reply.error or "")


def test_cache_hit_sends_no_second_request():
    cache = InMemoryJudgeCache()
    with running_chat_server([json_reply(JUDGEMENT)]) as server, _client(server, cache=cache) as client:
        first = client.complete_json(MESSAGES)
        second = client.complete_json(MESSAGES)
    assert len(server.chat_requests) == 1
    assert (second.ok, second.data, second.cached, second.attempts) == (True, first.data, True, 0)
    assert cache.get(cache_key("judge-model", MESSAGES, 0.0)) == json.dumps(JUDGEMENT)


def test_failed_answers_are_not_cached_so_a_rerun_retries_them():
    cache = InMemoryJudgeCache()
    script = [chat_reply("garbage"), json_reply(JUDGEMENT)]
    with running_chat_server(script) as server, _client(server, cache=cache) as client:
        assert not client.complete_json(MESSAGES).ok
        assert client.complete_json(MESSAGES).ok
    assert len(server.chat_requests) == 2


def test_cache_key_depends_on_model_messages_and_temperature():
    base = cache_key("m", MESSAGES, 0.0)
    assert base == cache_key("m", [dict(message) for message in MESSAGES], 0.0)
    assert base != cache_key("other", MESSAGES, 0.0)
    assert base != cache_key("m", MESSAGES, 0.7)
    assert base != cache_key("m", [*MESSAGES, {"role": "user", "content": "more"}], 0.0)
    assert len(base) == 64


def _echo(request):
    # Answers with the prompt it was given, so replies can be matched to requests.
    prompt = request.json["messages"][-1]["content"]
    return json_reply({"prompt": prompt}, delay_s=0.15)


def test_judge_many_bounds_concurrency_and_reports_on_the_calling_thread():
    requests = [JudgeRequest(key=n, messages=[{"role": "user", "content": f"p{n}"}]) for n in range(6)]
    seen = []
    with running_chat_server(_echo) as server, _client(server, max_concurrency=2) as client:
        replies = client.judge_many(
            requests, on_result=lambda request, reply: seen.append((request.key, threading.get_ident()))
        )
    assert server.max_in_flight == 2
    assert [reply.data for reply in replies] == [{"prompt": f"p{n}"} for n in range(6)]
    assert sorted(key for key, _ in seen) == list(range(6))
    assert {thread for _, thread in seen} == {threading.get_ident()}


def test_judge_many_sends_identical_prompts_once():
    same = [{"role": "user", "content": "same"}]
    requests = [
        JudgeRequest("a", same),
        JudgeRequest("b", same),
        JudgeRequest("c", [{"role": "user", "content": "x"}]),
    ]
    keys = []
    with running_chat_server(_echo) as server, _client(server) as client:
        replies = client.judge_many(requests, on_result=lambda request, _reply: keys.append(request.key))
    assert len(server.chat_requests) == 2
    assert replies[0] == replies[1]
    assert sorted(keys) == ["a", "b", "c"]


def test_a_reply_carries_the_token_usage_the_server_reported():
    completion = {
        "choices": [{"message": {"role": "assistant", "content": json.dumps(JUDGEMENT)}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }
    with running_chat_server(
        [raw_reply(200, json.dumps(completion), content_type="application/json")]
    ) as server:
        reply = _client(server).complete_json(MESSAGES)
    assert (reply.ok, reply.prompt_tokens, reply.completion_tokens) == (True, 120, 30)


def test_usage_that_is_missing_or_strange_counts_as_zero():
    completion = {"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": "many"}}
    with running_chat_server([raw_reply(200, json.dumps(completion))]) as server:
        reply = _client(server).complete_json(MESSAGES)
    assert (reply.prompt_tokens, reply.completion_tokens) == (0, 0)


def test_text_replies_take_any_text_and_cache_it_under_the_scope():
    # given a client in text-reply mode (a system answering, not a judge) and a shared cache
    cache = InMemoryJudgeCache()
    with running_chat_server([chat_reply("I hear you."), chat_reply("Other server.")]) as server:
        with _client(server, cache=cache, text_replies=True, cache_scope="http://a/v1") as client:
            # when it asks, the plain text is a good answer (no JSON object wanted)
            reply = client.complete_json(MESSAGES)
            assert (reply.ok, reply.data, reply.raw_text, reply.error) == (True, None, "I hear you.", None)
            # and the same prompt again comes from the cache, still as text
            again = client.complete_json(MESSAGES)
            assert (again.ok, again.raw_text, again.cached, again.attempts) == (True, "I hear you.", True, 0)
        # when another endpoint serves a model of the same name, its answers are its own
        with _client(server, cache=cache, text_replies=True, cache_scope="http://b/v1") as other:
            assert other.complete_json(MESSAGES).raw_text == "Other server."
            assert other.cache_key(MESSAGES) != cache_key("judge-model", MESSAGES, 0.0)
        assert len(server.chat_requests) == 2


def test_a_judge_still_refuses_plain_text():
    with running_chat_server([chat_reply("I hear you.")]) as server, _client(server) as client:
        reply = client.complete_json(MESSAGES)
    assert (reply.ok, reply.error) == (False, "answer is not a JSON object")
