"""Starting a job freezes its data: which items, takes and gold references; nothing ready, no job."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from annotation.gold.models import GoldReference
from ml.jobs.datasets import entries_hash
from ml.jobs.launch import INFERENCE_JOB, RL_JOB, SFT_JOB, LaunchRefused, start_ml_job
from ml.jobs.models import DatasetSnapshot
from tests.ml.jobs.support import TrainingItemFactory, tiny_sft_parameters
from webapp.models import Job, User


@pytest.fixture
def actor(make_user: Callable[..., User]) -> User:
    return make_user(None, "actor-s")


def test_the_snapshot_holds_the_current_gold_of_each_ready_item(db: None, actor: User) -> None:
    # given an item re-adjudicated (v2 current), one without a reference response, one without gold
    revised = TrainingItemFactory.create(external_id="TR-0", recording__actor=actor)
    GoldReference.objects.filter(item=revised).update(is_current=False)
    current = GoldReference.objects.create(
        item=revised, version=2, perception={}, tom={}, reference_response="Hi."
    )
    TrainingItemFactory.create(external_id="TR-1", recording__actor=actor, reference_response="")
    TrainingItemFactory.create(external_id="TR-2", recording__actor=actor, with_gold=False)
    TrainingItemFactory.create(external_id="TE-0", recording__actor=actor, split="test")

    # when SFT starts on the train split
    job = start_ml_job(SFT_JOB, started_by=None, parameters=tiny_sft_parameters(), splits=["train"])

    # then its snapshot names exactly the current gold of the one item SFT can learn from
    snapshot = DatasetSnapshot.objects.get(job=job)
    assert job.parameters["dataset_snapshot"] == snapshot.pk
    assert job.parameters["splits"] == ["train"]
    assert [entry["external_id"] for entry in snapshot.entries] == ["TR-0"]
    assert snapshot.gold_reference_ids == [current.pk]
    assert snapshot.entries[0]["take"] == revised.recording_id
    assert snapshot.excluded == {"gold has no reference response": 1, "no current gold reference": 1}
    assert snapshot.content_hash == entries_hash(snapshot.entries)


def test_rl_needs_gold_but_no_reference_response_and_inference_needs_neither(db: None, actor: User) -> None:
    TrainingItemFactory.create(external_id="TR-0", recording__actor=actor, reference_response="")
    TrainingItemFactory.create(external_id="TR-1", recording__actor=actor, with_gold=False)
    rl = start_ml_job(RL_JOB, started_by=None, parameters={}, splits=["train"])
    inference = start_ml_job(INFERENCE_JOB, started_by=None, parameters={}, splits=["train"])
    assert [entry["external_id"] for entry in DatasetSnapshot.objects.get(job=rl).entries] == ["TR-0"]
    inference_entries = DatasetSnapshot.objects.get(job=inference).entries
    assert [(entry["external_id"], entry["gold"]) for entry in inference_entries] == [
        ("TR-0", None),
        ("TR-1", None),
    ]


def test_nothing_ready_refuses_to_start_and_leaves_no_job(db: None, actor: User) -> None:
    TrainingItemFactory.create(external_id="TR-0", recording__actor=actor, with_gold=False)
    with pytest.raises(LaunchRefused, match="1 with no current gold reference"):
        start_ml_job(SFT_JOB, started_by=None, parameters=tiny_sft_parameters(), splits=["train"])
    assert not Job.objects.exists()
    assert not DatasetSnapshot.objects.exists()
