"""A rubric audio score by hand is taken only from an evaluator the server sent the whole spoken
response to, long enough ago to have heard it (`webapp.listening`, the rule of reviews and studies)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.judging.human_scoring import draw_rubric_sample
from evaluation.judging.models import HumanJudgement
from evaluation.outputs.models import ModelOutput, System
from tests.evaluation.judging_support import GOOD_SUBSCORES, BenchmarkItemFactory
from tests.factories import ModelOutputFactory
from tests.support.listening import client_of, fetch_audio
from webapp.models import AudioFetch, User
from webapp.storage import read_media

pytestmark = pytest.mark.usefixtures("media_root")

STAGES = ("perception", "reasoning", "response_content", "response_audio")


@pytest.fixture
def spoken(users: dict[str, User]) -> tuple[int, ModelOutput]:
    system = System.objects.create(name="Speaking", category=System.Category.OMNI)
    output = ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    sample = draw_rubric_sample(
        name="audio", benchmark_version="echoeval-v1", n_items=1, evaluators=[users["evaluator"]], seed=1
    )
    return sample.pk, output


def _scores() -> dict[str, str | list[str]]:
    data: dict[str, str | list[str]] = {"comment": ""}
    for stage in STAGES:
        data.update({f"{stage}__{name}": str(value) for name, value in GOOD_SUBSCORES[stage].items()})
    return data


def test_an_audio_score_with_no_audio_fetched_is_refused_and_after_ranges_covering_it_taken(
    spoken: tuple[int, ModelOutput], users: dict[str, User]
) -> None:
    sample_id, output = spoken
    evaluator = users["evaluator"]
    client = client_of(evaluator)
    url = reverse("evaluation:rubric_score", args=[sample_id, output.public_id])

    # a scripted POST that never fetched the audio
    refused = client.post(url, _scores())
    assert refused.status_code == 200
    assert "Play the whole spoken response first: the server has not sent you its audio." in (
        refused.content.decode()
    )
    assert not HumanJudgement.objects.exists()

    # the same after fetching the file by two Range requests that cover it, its length ago
    size = len(read_media(output.response_audio_key))
    half = size // 2
    fetch_audio(client, evaluator, output.response_audio_key, ranges=(f"bytes=0-{half}", f"bytes={half}-"))
    AudioFetch.objects.filter(user=evaluator).update(fetched_at=timezone.now() - timedelta(minutes=1))
    taken = client.post(url, _scores())
    assert taken.status_code == 302
    assert set(HumanJudgement.objects.filter(output=output).values_list("stage", flat=True)) == set(STAGES)
