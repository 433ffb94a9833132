"""Object graphs for the EchoChat job tests: items with accepted takes and gold, and tiny job parameters."""

from __future__ import annotations

from typing import Any

from annotation.gold.models import GoldReference
from annotation.labelling.models import Strategy
from annotation.recording.models import Item, Split, Take
from tests.ml.jobs.samples import GOLD_PERCEPTION, GOLD_TOM, REFERENCE_RESPONSE, voiced_wav
from webapp.jobs import run_job
from webapp.models import Job, User
from webapp.storage import new_media_key, save_media


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


def finished(job: Job) -> Job:
    """Run the job in this process as a worker would; return it reloaded."""
    run_job(job.pk)
    job.refresh_from_db()
    return job
