"""The EchoChat job tests' items (accepted takes and gold), tiny job parameters, jobs run in-process."""

from __future__ import annotations

from typing import Any

import factory

from annotation.labelling.models import Strategy
from annotation.recording.models import Item
from tests.factories import GoldReferenceFactory, RecordedItemFactory
from tests.ml.jobs.samples import GOLD_PERCEPTION, GOLD_TOM, REFERENCE_RESPONSE, voiced_wav
from tests.support.fake_chat_server import RecordedRequest, Reply, json_reply
from webapp.jobs import run_job
from webapp.lib import vocabulary
from webapp.models import Job


class TrainingItemFactory(RecordedItemFactory):
    """An item ready for training: on the train split, its accepted take a voiced sound at ``pitch_hz``,
    and a current gold reference (``perception``, ``tom``, ``reference_response``); ``with_gold=False``
    leaves it recorded without gold."""

    class Params:
        with_gold = True
        pitch_hz = 160.0
        perception = factory.LazyFunction(lambda: dict(GOLD_PERCEPTION))
        tom = factory.LazyFunction(lambda: dict(GOLD_TOM))
        reference_response = REFERENCE_RESPONSE

    text: Any = factory.LazyAttribute(lambda item: f"I ate alone again ({item.external_id}).")
    target_emotion = vocabulary.SAD
    emotion_variant = ""
    instructions = ""
    split = vocabulary.TRAIN
    state: Any = factory.Maybe("with_gold", Item.State.GOLD, Item.State.RECORDED)
    recording__wav = factory.LazyAttribute(lambda take: voiced_wav(pitch_hz=take.factory_parent.pitch_hz))
    gold = factory.Maybe(
        "with_gold",
        factory.RelatedFactory(
            GoldReferenceFactory,
            factory_related_name="item",
            perception=factory.SelfAttribute("..perception"),
            tom=factory.SelfAttribute("..tom"),
            reference_response=factory.SelfAttribute("..reference_response"),
        ),
    )

    @factory.post_generation
    def strategy_taxonomy(item: Item, create: bool, extracted: Any, **kwargs: Any) -> None:
        # Training records name gold strategies by their taxonomy names.
        Strategy.objects.get_or_create(slug="emotional-validation", defaults={"name": "Emotional validation"})


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


def tiny_rl_parameters(**config: Any) -> dict[str, Any]:
    """Return RL job parameters for the tiny demo model: one CPU step, no judge, no reward model."""
    return {
        "start_from": "tiny",
        "checkpoint_name": "",
        "reward_checkpoint": None,
        "judge_config": None,
        "config": {
            "group_size": 2,
            "max_steps": 1,
            "max_new_tokens": 8,
            "learning_rate": 1e-4,
            "lora": {"rank": 4, "alpha": 8},
            "device": "cpu",
            "dtype": "float32",
            **config,
        },
    }


def ladder_writer(request: RecordedRequest) -> Reply:
    """Answer a reward-ladder prompt with one reply per grade 0-4."""
    return json_reply({str(grade): f"Grade {grade} reply." for grade in range(5)})


def finished(job: Job) -> Job:
    """Run the job in this process as a worker would; return it reloaded."""
    run_job(job.pk)
    job.refresh_from_db()
    return job
