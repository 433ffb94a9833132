"""Benchmark items with gold, upload files and a rubric-speaking judge for the judging, results and
human-rubric tests (outputs and judgements: tests.factories)."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import factory

from evaluation.judging.rubrics import SUBSCORE_RANGES
from tests.factories import GoldReferenceFactory, ItemFactory
from tests.support.fake_chat_server import RecordedRequest, Reply, json_reply
from webapp.lib import vocabulary
from webapp.lib.llm_client import cache_key
from webapp.lib.output_format import render_output, render_reasoning, render_strategy

GOLD_PERCEPTION = {
    "polarity": "negative",
    "emotion": "sad",
    "emotion_variant": "loneliness",
    "intensity": "medium",
    "prosody_caption": "low pitch, slow, falling",
    "situation": "eats alone again",
    "modality_conflict": False,
}
GOLD_TOM = {
    "context": "lonely evening",
    "latent_need": "connection",
    "core_demand": "feel less alone",
    "recommended_strategies": ["emotional-validation", "questioning"],
    "not_recommended_strategies": ["information"],
    "constraints": ["no lecturing"],
}

# Sub-scores a well-behaved judge gives, per stage, and the score they sum to.
GOOD_SUBSCORES: dict[str, dict[str, int]] = {
    "perception": {
        "polarity": 1,
        "emotion": 2,
        "modality_consistency": 1,
        "situation": 1,
        "intensity": 1,
        "prosody": 2,
    },  # 8
    "shift_perception": {"situation": 2, "emotion_shift": 4, "structure": 1},  # 7
    "reasoning": {"context": 2, "latent_need": 1, "core_demand": 2, "strategy": 2, "constraints": 1},  # 8
    "response_content": {"content": 4},
    "response_audio": {"audio": 5},
}


def zip_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def jsonl(*rows: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode()


def echochat_text(response: str = "That sounds lonely. Do you want to tell me about your evening?") -> str:
    return render_output(
        "Sad, quiet voice; loneliness under a casual tone.",
        render_reasoning("Eating alone again", "connection", "feel less alone", "do not lecture"),
        render_strategy(["emotional validation", "questioning"], "comforting"),
        response,
    )


class BenchmarkItemFactory(ItemFactory):
    """A scripted benchmark item ("Script of <id>.", sad) with a gold reference (``gold=None``: none)."""

    text: Any = factory.LazyAttribute(lambda item: f"Script of {item.external_id}.")
    target_emotion = vocabulary.SAD
    emotion_variant = ""
    instructions = ""
    gold = factory.RelatedFactory(
        GoldReferenceFactory,
        factory_related_name="item",
        perception=factory.LazyFunction(lambda: dict(GOLD_PERCEPTION)),
        tom=factory.LazyFunction(lambda: dict(GOLD_TOM)),
    )


def _template_line(stage: str) -> str:
    return '{"subscores": {' + ", ".join(f'"{name}": <int>' for name in SUBSCORE_RANGES[stage]) + "}"


def stage_of(request: RecordedRequest) -> str:
    """Return the rubric stage a judge prompt asks about (read from its answer template)."""
    assert isinstance(request.json, dict)
    system_prompt = request.json["messages"][0]["content"]
    for stage in SUBSCORE_RANGES:
        if _template_line(stage) in system_prompt:
            return stage
    raise AssertionError("not a rubric prompt")


def prompt_key(request: RecordedRequest) -> str:
    """Return the cache key of a recorded chat request (identifies the prompt)."""
    assert isinstance(request.json, dict)
    body = request.json
    return cache_key(body["model"], body["messages"], body["temperature"])


def good_answer(stage: str) -> dict[str, Any]:
    return {"subscores": GOOD_SUBSCORES[stage], "flags": [], "rationale": f"fine {stage}"}


def rubric_judge(delay_s: float = 0.0) -> Any:
    """Return a fake-server handler that answers every rubric prompt well."""

    def answer(request: RecordedRequest) -> Reply:
        return json_reply(good_answer(stage_of(request)), delay_s=delay_s)

    return answer
