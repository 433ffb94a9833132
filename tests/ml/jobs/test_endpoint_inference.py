"""Endpoint inference against a real stub chat server on 127.0.0.1 that records every request: 200
takes each sent once with its own audio (the take's PCM, checked by checksum) and answered exactly
once, with the stub answering 429 Retry-After to a fifth of them first; dialogue turns sent with
the gold replies or the endpoint's own; a re-run after unanswered prompts asks only those; a cancel
stops the sending and stores nothing. Run on SQLite and on PostgreSQL."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from django.test import Client

from annotation.recording.models import Item
from evaluation.outputs.models import ModelOutput, System
from ml.jobs import endpoint_inference
from ml.jobs.forms import EndpointInferenceJobForm
from ml.jobs.launch import ENDPOINT_INFERENCE_JOB, start_ml_job
from tests.ml.jobs.dialogues.support import gold_reply, recorded_dialogue
from tests.ml.jobs.endpoint_support import sent_audio, take_digests, take_of
from tests.ml.jobs.support import TrainingItemFactory, finished
from tests.support.fake_chat_server import (
    FakeChatServer,
    RecordedRequest,
    Reply,
    chat_reply,
    running_chat_server,
    status_reply,
)
from webapp.api.tokens import create_token
from webapp.jobs import JobReporter
from webapp.lib import vocabulary
from webapp.lib.output_format import parse_output, render_output, render_strategy
from webapp.models import Job, JobStatus

pytestmark = pytest.mark.usefixtures("ml_storage")
MODEL = "echochat-omni"


class Stub:
    """Answers each take with a text of its own (numbered); a fifth of the takes get 429 with
    Retry-After on their first request; the takes in `refuse` get HTTP 400 (no retry mends it)."""

    def __init__(self, digests: dict[str, str], refuse: frozenset[str] = frozenset()) -> None:
        self.digests, self.refuse = digests, refuse
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()
        self.answered: dict[str, list[str]] = {}  # item id: the answers given with 200

    def __call__(self, request: RecordedRequest) -> Reply:
        item_id = take_of(request, self.digests)
        with self.lock:
            self.seen[item_id] += 1
            first = self.seen[item_id] == 1
            number = sum(len(answers) for answers in self.answered.values())
            if item_id in self.refuse:
                return status_reply(400, message="bad audio")
            if first and int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % 5 == 0:
                return status_reply(429, retry_after=0.01)
            text = render_output(
                f"Heard {item_id}.",
                "Context: alone",
                render_strategy(["Reassurance"], "calm"),
                f"Reply {number}.",
            )
            self.answered.setdefault(item_id, []).append(text)
            return chat_reply(text, model=MODEL)


@pytest.fixture(autouse=True)
def _quiet_voice(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    settings.TTS_BACKEND = "espeak"
    monkeypatch.setattr(
        endpoint_inference,
        "configured_synthesizer",
        lambda: lambda text, style: (np.zeros(160, np.int16), 16_000),
    )


@pytest.fixture
def stub_server() -> Iterator[Callable[[Stub], Any]]:
    servers: list[Any] = []

    def start(stub: Stub) -> FakeChatServer:
        context = running_chat_server(stub)
        servers.append(context)
        return context.__enter__()

    yield start
    for context in servers:
        context.__exit__(None, None, None)


def _start(base_url: str, history: str = "", system_name: str = "Omni at vLLM", concurrency: int = 8) -> Job:
    return start_ml_job(
        ENDPOINT_INFERENCE_JOB,
        started_by=None,
        parameters={
            "endpoint_url": base_url,
            "model": MODEL,
            "key_variable": "",
            "system_name": system_name,
            "system_category": System.Category.OMNI,
            "benchmark_version": "echoeval-v1",
            "dialogue_history": history,
            "max_concurrency": concurrency,
            "max_tokens": 64,
            "temperature": 0.0,
            "system_prompt": "",
        },
        splits=[vocabulary.TEST],
    )


def _outputs(system_name: str) -> dict[str, ModelOutput]:
    return {
        output.item.external_id: output
        for output in ModelOutput.objects.filter(system__name=system_name).select_related("item")
    }


def test_200_takes_each_carry_their_audio_and_are_stored_exactly_once_through_429s(
    db: None, stub_server: Callable[[Stub], FakeChatServer]
) -> None:
    # given 200 recorded test items, each a voice of its own pitch, and a stub that answers a
    # fifth of them 429 with Retry-After first
    for number in range(200):
        TrainingItemFactory.create(
            external_id=f"EE-{number:03d}", split=vocabulary.TEST, pitch_hz=90.0 + number, with_gold=False
        )
    digests = take_digests()
    assert len(digests) == 200  # every take's audio is its own
    stub = Stub(digests)
    server = stub_server(stub)

    # when the endpoint inference job runs with 8 requests in flight
    job = finished(_start(server.base_url))

    # then it succeeded, every take was answered exactly once (the 429s were asked again, once)
    assert job.status == JobStatus.SUCCEEDED, job.error
    limited = [
        item for item in digests.values() if int(hashlib.sha256(item.encode()).hexdigest(), 16) % 5 == 0
    ]
    assert limited  # the stub did answer some 429
    assert {item: len(answers) for item, answers in stub.answered.items()} == dict.fromkeys(
        digests.values(), 1
    )
    assert len(server.chat_requests) == 200 + len(limited)
    assert 1 < server.max_in_flight <= 8
    for request in server.chat_requests:
        body: Any = request.json
        # each request is one take: its audio alone (no history) and the instruction, to the model
        assert body["model"] == MODEL
        assert [message["role"] for message in body["messages"]] == ["user"]
        assert len(sent_audio(body["messages"][0])) == 1
        assert body["messages"][0]["content"][1]["type"] == "text"
    # and the outputs are exactly what the stub answered, each item once
    outputs = _outputs("Omni at vLLM")
    assert {item: output.raw_text for item, output in outputs.items()} == {
        item: answers[0] for item, answers in stub.answered.items()
    }
    system = System.objects.get(name="Omni at vLLM")
    assert (system.category, system.text_only, system.version) == (
        System.Category.OMNI,
        False,
        f"{MODEL} at {server.base_url}",
    )
    assert all(output.response_audio_key for output in outputs.values())  # voiced, as in-process
    assert (
        job.result is not None
        and job.result["outputs"] == 200
        and job.result["requests"] == len(server.chat_requests)
    )

    # when it runs again, every answer comes from the cache: no request is sent, nothing changes
    again = finished(_start(server.base_url))
    assert again.status == JobStatus.SUCCEEDED, again.error
    assert len(server.chat_requests) == 200 + len(limited)
    assert again.result is not None and again.result["cached"] == 200
    assert {item: output.raw_text for item, output in _outputs("Omni at vLLM").items()} == {
        item: output.raw_text for item, output in outputs.items()
    }


@pytest.mark.parametrize("history", ["gold", "own"])
def test_dialogue_turns_carry_the_earlier_turns_audio_and_the_replies_of_the_history_rule(
    db: None, stub_server: Callable[[Stub], FakeChatServer], history: str
) -> None:
    # given three recorded three-turn test dialogues with gold on every turn
    for number, name in enumerate(("D-1", "D-2", "D-3")):
        recorded_dialogue(name, turns=3, split=vocabulary.TEST, base_pitch_hz=140.0 + 7 * number)
    digests = take_digests()
    assert len(digests) == 9  # every take's audio is its own
    stub = Stub(digests)
    server = stub_server(stub)

    # when they are answered turn by turn at the endpoint
    job = finished(_start(server.base_url, history=history, system_name=f"Omni {history}"))

    # then every turn was sent once, after the earlier turns' audio and replies
    assert job.status == JobStatus.SUCCEEDED, job.error
    outputs = _outputs(f"Omni {history}")
    assert len(outputs) == 9
    by_item = {item.external_id: item for item in Item.objects.filter(dialogue__isnull=False)}
    limited = [item for item in by_item if int(hashlib.sha256(item.encode()).hexdigest(), 16) % 5 == 0]
    assert len(server.chat_requests) == 9 + len(limited)
    assert all(len(answers) == 1 for answers in stub.answered.values())
    for request in server.chat_requests:
        messages: Any = request.json["messages"]  # type: ignore[index]
        item = by_item[take_of(request, digests)]
        dialogue = item.dialogue
        assert dialogue is not None and item.turn is not None
        earlier = sorted(
            (
                turn
                for turn in by_item.values()
                if turn.dialogue_id == dialogue.pk and (turn.turn or 0) < item.turn
            ),
            key=lambda turn: turn.turn or 0,
        )
        assert [message["role"] for message in messages] == ["user", "assistant"] * len(earlier) + ["user"]
        heard = [digests[sent_audio(message)[0]] for message in messages[:-1:2]]
        assert heard == [turn.external_id for turn in earlier]
        replies = [message["content"] for message in messages[1::2]]
        if history == "gold":
            assert replies == [gold_reply(dialogue.external_id, turn.turn or 0) for turn in earlier]
        else:
            assert replies == [
                parse_output(stub.answered[turn.external_id][0]).span_text("response").strip()
                for turn in earlier
            ]
        # and the stored output is the stub's answer, with the history it was sent with
        output = outputs[item.external_id]
        assert output.raw_text == stub.answered[item.external_id][0]
        assert output.history == {
            "source": history,
            "replies": [{"turn": number, "reply": reply} for number, reply in enumerate(replies, start=1)],
        }


def test_unanswered_takes_store_nothing_and_a_rerun_asks_only_those(
    db: None, stub_server: Callable[[Stub], FakeChatServer]
) -> None:
    # given 12 takes, of which the stub refuses three with HTTP 400
    for number in range(12):
        TrainingItemFactory.create(
            external_id=f"EE-{number:02d}",
            split=vocabulary.TEST,
            pitch_hz=100.0 + 7 * number,
            with_gold=False,
        )
    digests = take_digests()
    refused = frozenset({"EE-03", "EE-07", "EE-11"})
    stub = Stub(digests, refuse=refused)
    server = stub_server(stub)

    # when the job runs, it fails saying so, and stores nothing (an import of part would remove the rest)
    job = finished(_start(server.base_url))
    assert job.status == JobStatus.FAILED
    assert "3 takes got no answer" in job.error
    assert not ModelOutput.objects.exists()

    # when the endpoint mends and the job runs again (as after a worker died), only the three are asked
    stub.refuse = frozenset()
    sent_before = len(server.chat_requests)
    again = finished(_start(server.base_url))
    assert again.status == JobStatus.SUCCEEDED, again.error
    asked_again = [take_of(request, digests) for request in server.chat_requests[sent_before:]]
    assert set(asked_again) == refused
    assert {item: output.raw_text for item, output in _outputs("Omni at vLLM").items()} == {
        item: answers[0] for item, answers in stub.answered.items()
    }
    assert all(len(answers) == 1 for answers in stub.answered.values())


def test_a_cancel_stops_sending_and_stores_nothing(
    db: None, stub_server: Callable[[Stub], FakeChatServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given 40 takes, and an admin who cancels once ten have been answered
    for number in range(40):
        TrainingItemFactory.create(
            external_id=f"EE-{number:02d}",
            split=vocabulary.TEST,
            pitch_hz=100.0 + 3 * number,
            with_gold=False,
        )
    stub = Stub(take_digests())
    server = stub_server(stub)
    monkeypatch.setattr(endpoint_inference, "PROGRESS_EVERY_S", 0.0)
    # Every progress report looks for the cancel (not one each 0.2 s): the stub answers in
    # microseconds, so all forty could be answered before a timed check came round.
    monkeypatch.setattr(JobReporter.__init__, "__kwdefaults__", {"min_interval_s": 0.0})
    monkeypatch.setattr(JobReporter, "should_cancel", lambda reporter: len(stub.answered) >= 10)

    # when the job runs with two requests in flight
    job = finished(_start(server.base_url, concurrency=2))

    # then it is cancelled, the takes not sent yet were never sent, and no output is stored
    assert job.status == JobStatus.CANCELLED
    assert len(stub.seen) < 40
    assert not ModelOutput.objects.exists()


def test_the_form_checks_the_url_and_the_key_against_the_outbound_policy(db: None, settings: Any) -> None:
    TrainingItemFactory.create(external_id="EE-00", split=vocabulary.TEST, with_gold=False)
    fields = {
        "splits": [vocabulary.TEST],
        "endpoint_url": "http://10.0.0.5:8000/v1",
        "model": MODEL,
        "system_name": "Omni",
        "system_category": System.Category.OMNI,
        "benchmark_version": "echoeval-v1",
        "max_concurrency": 8,
        "max_tokens": 64,
        "temperature": 0.0,
    }
    # an internal host the operator did not allow is refused
    form = EndpointInferenceJobForm(fields)
    assert not form.is_valid() and "internal address" in str(form.errors["endpoint_url"])
    # a key variable outside the prefix, or one bound to another host, is refused
    settings.OUTBOUND_ALLOWED_HOSTS = ["10.0.0.5"]
    settings.OUTBOUND_KEY_HOSTS = {"ECHOSTUDIO_JUDGE_KEY_VLLM": "10.0.0.6"}
    form = EndpointInferenceJobForm({**fields, "key_variable": "DJANGO_SECRET_KEY"})
    assert not form.is_valid() and "key_variable" in form.errors
    form = EndpointInferenceJobForm({**fields, "key_variable": "ECHOSTUDIO_JUDGE_KEY_VLLM"})
    assert not form.is_valid() and "key_variable" in form.errors
    # bound to this host, it may go; the parameters name the variable, never the key
    settings.OUTBOUND_KEY_HOSTS = {"ECHOSTUDIO_JUDGE_KEY_VLLM": "10.0.0.5:8000"}
    form = EndpointInferenceJobForm({**fields, "key_variable": "ECHOSTUDIO_JUDGE_KEY_VLLM"})
    assert form.is_valid(), form.errors
    assert form.job_parameters()["key_variable"] == "ECHOSTUDIO_JUDGE_KEY_VLLM"
    # a name another category's system holds is refused
    System.objects.create(name="Omni", category=System.Category.GENERAL)
    assert (
        "system_name" in EndpointInferenceJobForm(fields | {"endpoint_url": "http://10.0.0.5:8000/v1"}).errors
    )


@pytest.mark.parametrize(
    ("role", "status"), [("admin", 201), ("annotator", 403), ("evaluator", 403), ("norole", 403)]
)
def test_the_api_starts_it_for_admins_only(db: None, users: dict[str, Any], role: str, status: int) -> None:
    TrainingItemFactory.create(external_id="EE-00", split=vocabulary.TEST, with_gold=False)
    api = Client(HTTP_AUTHORIZATION=f"Token {create_token(users[role], 'tests').secret}")
    body = {
        "kind": ENDPOINT_INFERENCE_JOB,
        "parameters": {"endpoint_url": "http://127.0.0.1:8000/v1", "model": MODEL, "system_name": "Omni"},
    }
    response = api.post("/api/jobs/", body, content_type="application/json")
    assert response.status_code == status, response.content
    if status == 201:
        job = Job.objects.get(pk=response.json()["id"])
        assert (job.kind, job.queue, job.parameters["splits"]) == (
            ENDPOINT_INFERENCE_JOB,
            "default",
            [vocabulary.TEST],
        )
    else:
        assert not Job.objects.exists()


def test_the_endpoint_job_loads_no_torch() -> None:
    code = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'webapp.settings'); django.setup(); "
        "import ml.jobs.endpoint_inference; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'torch loaded'"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
