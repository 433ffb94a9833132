"""Object graphs and a rubric-speaking judge for the judging, results and human-rubric tests."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotation.audio.synthesis import to_wav_bytes
from annotation.gold.models import GoldReference
from annotation.recording.models import Item
from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.rubrics import SUBSCORE_RANGES
from evaluation.outputs.models import ModelOutput, System
from tests.support.fake_chat_server import RecordedRequest, Reply, json_reply
from webapp.lib.llm_client import cache_key
from webapp.lib.output_format import render_output, render_reasoning, render_strategy
from webapp.storage import new_media_key, save_media

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


def tiny_wav(seconds: float = 0.05, frequency: float = 220.0) -> bytes:
    """Return a short real WAV (a sine) to stand for a spoken response."""
    t = np.arange(round(seconds * 16_000)) / 16_000
    return to_wav_bytes((8000 * np.sin(2 * np.pi * frequency * t)).astype(np.int16), 16_000)


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


def make_item(external_id: str, scenario: str = "implicit", *, gold: bool = True) -> Item:
    item = Item.objects.create(
        external_id=external_id, text=f"Script of {external_id}.", scenario=scenario, target_emotion="sad"
    )
    if gold:
        GoldReference.objects.create(item=item, version=1, perception=GOLD_PERCEPTION, tom=GOLD_TOM)
    return item


def make_output(system: System, item: Item, version: str = "echoeval-v1", **fields: Any) -> ModelOutput:
    defaults: dict[str, Any] = {
        "perception_text": "The user sounds sad and lonely.",
        "reasoning_text": "Context: alone\nLatent need: company\nCore demand: be heard",
        "reasoning_fields": {
            "context": "alone",
            "latent_need": "company",
            "core_demand": "be heard",
            "strategy": ["emotional validation"],
        },
        "strategy_text": "Strategies: emotional validation",
        "response_text": "I'm sorry you ate alone. Want to talk?",
        "response_audio_key": ""
        if system.text_only
        else save_media(new_media_key("model_output", "wav"), tiny_wav()),
    }
    defaults.update(fields)
    return ModelOutput.objects.create(system=system, item=item, benchmark_version=version, **defaults)


def make_judgement(output: ModelOutput, stage: str, config: JudgeConfig, score: float | None) -> Judgement:
    """Store a judgement with a given final score (None: a judge error)."""
    return Judgement.objects.create(
        output=output,
        stage=stage,
        judge_config=config,
        judge_model="fixture",
        prompt_version="v1",
        prompt_key=f"{output.pk}-{stage}",
        score=score,
        raw_sum=score,
        error_kind="" if score is not None else Judgement.ErrorKind.INVALID_JSON,
        error="" if score is not None else "answer is not a JSON object",
        raw_text="garbage" if score is None else "{}",
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


@pytest.fixture
def media_root(settings: Any, tmp_path: Path) -> Path:
    """Store media under the test's own folder."""
    root = tmp_path / "media"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(root)},
        },
    }
    return root
