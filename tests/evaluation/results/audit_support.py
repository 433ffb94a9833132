"""Outputs to audit and chat-API stub judges for the judge audit tests: a clean one, and one whose
response score rises with the reply's length (a planted length bias the audit must find)."""

from __future__ import annotations

from typing import Any

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory, good_answer, stage_of
from tests.factories import ModelOutputFactory
from tests.support.fake_chat_server import RecordedRequest, Reply, json_reply

REPLIES = (
    "I'm sorry you ate alone. Want to talk?",
    "That sounds lonely. I am glad you told me.",
    "Eating alone again is hard. What happened tonight?",
    "You sound low. Shall we talk about your evening?",
    "I hear you. Being alone at dinner can sting.",
    "That must feel empty. Do you want company on a call?",
)


def audited_system(n: int = 6, *, text_only: bool = True, replies: tuple[str, ...] = REPLIES) -> System:
    """Return a system with `n` outputs on items with gold (sad, not-recommended: information)."""
    system = System.objects.create(name="Omni-A", text_only=text_only)
    for number in range(n):
        ModelOutputFactory.create(
            system=system,
            item=BenchmarkItemFactory.create(external_id=f"EE-{number}"),
            response_text=replies[number % len(replies)],
        )
    return system


def model_output_of(request: RecordedRequest) -> str:
    assert isinstance(request.json, dict)
    content = request.json["messages"][1]["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return str(text).split("Model output:\n", 1)[1]


def length_biased_judge(delay_s: float = 0.0) -> Any:
    """Return a handler scoring response content by the reply's word count (1 + words // 8)."""

    def answer(request: RecordedRequest) -> Reply:
        stage = stage_of(request)
        data = good_answer(stage)
        if stage == "response_content":
            words = len(model_output_of(request).split())
            data = {**data, "subscores": {"content": max(1, min(5, 1 + words // 8))}}
        return json_reply(data, delay_s=delay_s)

    return answer


def stub_config(name: str, base_url: str, **fields: Any) -> JudgeConfig:
    return JudgeConfig.objects.create(name=name, base_url=base_url, model=f"{name}-model", **fields)
