"""Object graphs for the EchoChat job tests: items with accepted takes and gold, and tiny job parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotation.models import GoldReference, Item, Split, Strategy, Take
from evaluation.rubrics import SUBSCORE_RANGES
from ml.training_records import wav_bytes
from tests.support.fake_chat_server import RecordedRequest
from webapp.jobs import run_job
from webapp.models import Job, User
from webapp.storage import new_media_key, save_media

GOLD_PERCEPTION = {
    "polarity": "negative",
    "emotion": "sad",
    "emotion_variant": "loneliness",
    "intensity": "medium",
    "pitch": "low",
    "prosody_caption": "soft and slow",
    "situation": "eats alone",
    "modality_conflict": False,
}
GOLD_TOM = {
    "context": "alone again",
    "latent_need": "company",
    "core_demand": "be heard",
    "recommended_strategies": ["emotional-validation"],
    "not_recommended_strategies": ["information"],
    "constraints": ["lecturing"],
}
REFERENCE_RESPONSE = "That sounds lonely. I am here."


def voiced_wav(seconds: float = 0.6, pitch_hz: float = 160.0) -> bytes:
    """Return a short vowel-like WAV: harmonics under an envelope."""
    time = np.arange(int(seconds * 16_000)) / 16_000
    phase = 2 * np.pi * pitch_hz * time
    signal = 0.3 * np.sin(np.pi * time / seconds) * sum(np.sin(k * phase) / k for k in range(1, 4))
    return wav_bytes(signal.astype(np.float32), 16_000)


def make_ready_item(
    actor: User,
    external_id: str,
    *,
    split: str = Split.TRAIN,
    gold: bool = True,
    reference_response: str = REFERENCE_RESPONSE,
    pitch_hz: float = 160.0,
    perception: dict[str, Any] | None = None,
    tom: dict[str, Any] | None = None,
) -> Item:
    """Return an item with an accepted take and, by default, a current gold reference."""
    Strategy.objects.get_or_create(slug="emotional-validation", defaults={"name": "Emotional validation"})
    item = Item.objects.create(
        external_id=external_id,
        text=f"I ate alone again ({external_id}).",
        scenario="implicit",
        target_emotion="sad",
        split=split,
        state=Item.State.GOLD if gold else Item.State.RECORDED,
    )
    key = save_media(new_media_key("take", "wav"), voiced_wav(pitch_hz=pitch_hz))
    take = Take.objects.create(
        item=item, actor=actor, status=Take.Status.ACCEPTED, audio_key=key, original_key=key
    )
    item.recording = take
    item.save(update_fields=["recording"])
    if gold:
        GoldReference.objects.create(
            item=item,
            version=1,
            perception=GOLD_PERCEPTION if perception is None else perception,
            tom=GOLD_TOM if tom is None else tom,
            reference_response=reference_response,
        )
    return item


def tiny_sft_parameters(**config: Any) -> dict[str, Any]:
    """Return SFT job parameters for the tiny demo model: a few CPU steps."""
    return {
        "start_from": "tiny",
        "checkpoint_name": "",
        "config": {
            "max_steps": 2,
            "learning_rate": 1e-3,
            "batch_size": 2,
            "lambda_aaa": 0.1,
            "lora": {"rank": 4, "alpha": 8},
            "device": "cpu",
            "dtype": "float32",
            **config,
        },
    }


def rubric_stage(request: RecordedRequest) -> str:
    """Return the rubric stage a judge prompt asks about (read from its answer template)."""
    assert isinstance(request.json, dict)
    system_prompt = request.json["messages"][0]["content"]
    for stage, ranges in SUBSCORE_RANGES.items():
        if '{"subscores": {' + ", ".join(f'"{name}": <int>' for name in ranges) + "}" in system_prompt:
            return stage
    raise AssertionError("not a rubric prompt")


def finished(job: Job) -> Job:
    """Run the job in this process as a worker would; return it reloaded."""
    run_job(job.pk)
    job.refresh_from_db()
    return job


@pytest.fixture
def ml_storage(settings: Any, tmp_path: Path) -> Path:
    """Keep media and checkpoints under the test's own folder; return the checkpoint folder."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    settings.CHECKPOINT_DIR = tmp_path / "checkpoints"
    # The heartbeat thread writes from its own connection, which SQLite locks out while the test's
    # transaction is open; heartbeats are not what these tests are about.
    settings.JOB_HEARTBEAT_SECONDS = 3600
    settings.ECHOCHAT_BASE_MODEL = ""
    return tmp_path / "checkpoints"
