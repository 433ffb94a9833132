"""A real OpenAI-compatible chat-completions server on 127.0.0.1 for tests.

It is an `http.server.ThreadingHTTPServer` on a free port, served from a background thread, so
the code under test talks real HTTP (httpx, requests, the openai client) with no mocking.

Usage::

    from tests.support.fake_chat_server import json_reply, running_chat_server, status_reply

    with running_chat_server([status_reply(429, retry_after=0), json_reply({"ok": True})]) as server:
        client = SomeClient(base_url=server.base_url)      # http://127.0.0.1:PORT/v1
        ...
        assert len(server.requests) == 2
        assert server.requests[0].json["model"] == "judge-model"

The behaviour is scripted by `handler`, either:

- a sequence of `Reply` objects, served in order, one per POST /v1/chat/completions (once the
  script runs out the server answers 500 "script exhausted", so a test sending more requests
  than it planned fails loudly); or
- a callable `(RecordedRequest) -> Reply`, to answer according to what was asked (e.g. by the
  prompt text), which may be called from several server threads at once.

Reply builders: `chat_reply(content)` (200 with the OpenAI response shape around an assistant
message), `json_reply(obj)` (the same with `json.dumps(obj)` as content), `status_reply(status,
retry_after=...)` (an error status with an OpenAI-style error body), `raw_reply(status, body)`
(any body, e.g. a non-JSON page). Every Reply can carry `delay_s`: the server waits that long
before answering, e.g. longer than the client's timeout.

The server records every request (`server.requests`: path, headers, parsed JSON body) and the
peak number of requests in flight at once (`server.max_in_flight`) to check concurrency limits.
GET /v1/models answers with one model, `FAKE_MODEL`, for clients that probe the endpoint first.
Closing the context stops the server and cuts any pending `delay_s` short.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAKE_MODEL = "fake-judge"
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: object | None  # the parsed body; None when it was not JSON
    received_at: float


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


Handler = Sequence[Reply] | Callable[[RecordedRequest], Reply]


def chat_reply(content: str, *, model: str = FAKE_MODEL, delay_s: float = 0.0) -> Reply:
    """Return a 200 chat completion whose assistant message is `content`."""
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }
    return Reply(
        status=200,
        body=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        delay_s=delay_s,
    )


def json_reply(data: object, *, model: str = FAKE_MODEL, delay_s: float = 0.0) -> Reply:
    """Return a 200 chat completion whose assistant message is `data` serialised as JSON."""
    return chat_reply(json.dumps(data), model=model, delay_s=delay_s)


def status_reply(
    status: int, *, retry_after: float | None = None, message: str = "", delay_s: float = 0.0
) -> Reply:
    """Return an error status with an OpenAI-style error body and an optional Retry-After header."""
    headers = {"Content-Type": "application/json"}
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
    body = {"error": {"message": message or f"fake status {status}", "type": "fake_error", "code": status}}
    return Reply(status=status, body=json.dumps(body).encode(), headers=headers, delay_s=delay_s)


def raw_reply(
    status: int, body: bytes | str, *, content_type: str = "text/plain", delay_s: float = 0.0
) -> Reply:
    """Return any body as-is (for proxies that answer HTML or truncated JSON)."""
    data = body.encode() if isinstance(body, str) else body
    return Reply(status=status, body=data, headers={"Content-Type": content_type}, delay_s=delay_s)


class FakeChatServer(ThreadingHTTPServer):
    # Daemon threads so that a handler still waiting out a long delay never blocks shutdown.
    daemon_threads = True

    def __init__(self, handler: Handler) -> None:
        super().__init__(("127.0.0.1", 0), _RequestHandler)
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.stopping = threading.Event()
        self._handler = handler
        self._script_position = 0
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """Return the OpenAI-style base URL (clients append /chat/completions)."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Return the requests made to /v1/chat/completions, in arrival order."""
        with self._lock:
            return [request for request in self.requests if request.path == CHAT_PATH]

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def finish(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def reply_for(self, request: RecordedRequest) -> Reply:
        if callable(self._handler):
            return self._handler(request)
        with self._lock:
            position = self._script_position
            self._script_position += 1
        if position >= len(self._handler):
            return status_reply(500, message=f"script exhausted after {len(self._handler)} replies")
        return self._handler[position]


class _RequestHandler(BaseHTTPRequestHandler):
    server: FakeChatServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; with Nagle's algorithm the body waited for the client's
    # delayed ACK of the headers (up to 40 ms a request on Linux), which no real serving engine adds
    # (uvicorn, vLLM's server, sets TCP_NODELAY), so the judge benches measured the stub's stall.
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        request = self._record(body)
        try:
            if self.path != CHAT_PATH:
                self._send(status_reply(404, message=f"no route {self.path}"))
                return
            reply = self.server.reply_for(request)
            # Waiting on the server's stop event lets shutdown cut a long delay short.
            if reply.delay_s and self.server.stopping.wait(reply.delay_s):
                return
            self._send(reply)
        finally:
            self.server.finish()

    def do_GET(self) -> None:
        self._record(b"")
        try:
            if self.path == "/v1/models":
                body = {
                    "object": "list",
                    "data": [{"id": FAKE_MODEL, "object": "model", "owned_by": "tests"}],
                }
                self._send(Reply(200, json.dumps(body).encode(), {"Content-Type": "application/json"}))
            else:
                self._send(status_reply(404, message=f"no route {self.path}"))
        finally:
            self.server.finish()

    def _record(self, body: bytes) -> RecordedRequest:
        try:
            parsed: object | None = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={key: value for key, value in self.headers.items()},
            body=body,
            json=parsed,
            received_at=time.monotonic(),
        )
        self.server.record(request)
        return request

    def _send(self, reply: Reply) -> None:
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout passed); nothing left to answer.
            return

    def log_message(self, format: str, *args: object) -> None:
        # Keep pytest output clean; the requests are recorded on the server instead.
        return


@contextmanager
def running_chat_server(handler: Handler) -> Iterator[FakeChatServer]:
    """Run a FakeChatServer on 127.0.0.1 (a free port) for the duration of the block."""
    server = FakeChatServer(handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
