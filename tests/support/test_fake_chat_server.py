import json

import httpx

from tests.support.fake_chat_server import FAKE_MODEL, chat_reply, running_chat_server, status_reply


def test_serves_the_script_in_order_then_fails_loudly():
    script = [status_reply(429, retry_after=1.5), chat_reply("hello")]
    with running_chat_server(script) as server, httpx.Client(base_url=server.base_url + "/") as http:
        limited = http.post("chat/completions", json={"model": "m", "messages": []})
        answered = http.post("chat/completions", json={"model": "m", "messages": []})
        exhausted = http.post("chat/completions", json={"model": "m", "messages": []})
    assert (limited.status_code, limited.headers["Retry-After"]) == (429, "1.5")
    assert answered.json()["choices"][0]["message"] == {"role": "assistant", "content": "hello"}
    assert answered.json()["object"] == "chat.completion"
    assert exhausted.status_code == 500
    assert "script exhausted" in exhausted.text
    assert [request.json for request in server.chat_requests] == [{"model": "m", "messages": []}] * 3


def test_a_callable_handler_answers_from_the_request():
    def handler(request):
        return chat_reply(json.dumps({"echo": request.json["messages"][0]["content"]}))

    with running_chat_server(handler) as server, httpx.Client() as http:
        response = http.post(f"{server.base_url}/chat/completions", json={"messages": [{"content": "hi"}]})
        models = http.get(f"{server.base_url}/models")
    assert json.loads(response.json()["choices"][0]["message"]["content"]) == {"echo": "hi"}
    assert models.json()["data"][0]["id"] == FAKE_MODEL
    assert [request.path for request in server.requests] == ["/v1/chat/completions", "/v1/models"]


def test_unknown_paths_are_404():
    with running_chat_server([]) as server, httpx.Client() as http:
        assert http.post(f"{server.base_url}/completions", json={}).status_code == 404
