"""The demo systems answer every dialogue turn in the database, spoken by eSpeak NG."""

from __future__ import annotations

import pytest

from evaluation.outputs.demo import DEMO_SYSTEMS, DEMO_VERSION, seed_demo_outputs
from evaluation.outputs.models import ModelOutput, System
from ml.core.training_records import read_wav
from tests.factories import DialogueFactory
from webapp.storage import read_media

pytestmark = [pytest.mark.usefixtures("media_root"), pytest.mark.django_db]


def test_both_demo_systems_answer_every_turn_with_speech_and_a_second_seed_changes_nothing() -> None:
    DialogueFactory.create(external_id="DEMO-D1", turns=3)
    DialogueFactory.create(external_id="DEMO-D2", turns=2)

    assert seed_demo_outputs() == 2 * 5

    for name, _, _ in DEMO_SYSTEMS:
        outputs = (
            ModelOutput.objects.for_version(DEMO_VERSION)
            .filter(system__name=name)
            .order_by("item__external_id")
        )
        assert [output.item.external_id for output in outputs] == [
            "DEMO-D1.t1",
            "DEMO-D1.t2",
            "DEMO-D1.t3",
            "DEMO-D2.t1",
            "DEMO-D2.t2",
        ]
        for output in outputs:
            samples, rate = read_wav(read_media(output.response_audio_key))
            assert rate > 0 and len(samples) > rate // 4  # real speech, not a stub
    ours = ModelOutput.objects.filter(
        system__category=System.Category.OURS, item__external_id="DEMO-D1.t2"
    ).get()
    assert ours.structured and ours.perception_text.startswith("Turn 2:")
    feeling = ours.item.emotion_variant or ours.item.target_emotion
    assert f"feeling {feeling} now" in ours.response_text  # each turn's reply follows its emotion

    keys = set(ModelOutput.objects.values_list("response_audio_key", flat=True))
    assert seed_demo_outputs() == 10
    assert set(ModelOutput.objects.values_list("response_audio_key", flat=True)) == keys
