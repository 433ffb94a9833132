"""The judging access helpers: an evaluator's samples and outputs, and nothing else, exist for them."""

from __future__ import annotations

import pytest
from django.http import Http404

from evaluation.judging.access import entry_for_evaluator, sample_for_evaluator
from evaluation.judging.models import RubricSample, RubricSampleEntry
from tests.factories import ModelOutputFactory, SystemFactory
from webapp.models import User

pytestmark = pytest.mark.django_db


def _sample(evaluator: User) -> tuple[RubricSample, RubricSampleEntry]:
    sample = RubricSample.objects.create(name="s", benchmark_version="echoeval-v1")
    sample.evaluators.set([evaluator])
    output = ModelOutputFactory.create(system=SystemFactory.create(text_only=True))
    return sample, RubricSampleEntry.objects.create(sample=sample, output=output, position=0)


def test_an_invited_evaluator_reaches_the_sample_and_its_outputs(users: dict[str, User]) -> None:
    sample, entry = _sample(users["evaluator"])

    assert sample_for_evaluator(users["evaluator"], sample.pk) == sample
    assert entry_for_evaluator(sample, entry.output.public_id) == entry


def test_another_users_sample_does_not_exist_for_them(users: dict[str, User]) -> None:
    sample, _ = _sample(users["evaluator"])

    with pytest.raises(Http404):
        sample_for_evaluator(users["admin"], sample.pk)


def test_an_output_of_another_sample_does_not_exist_in_this_one(users: dict[str, User]) -> None:
    sample, _ = _sample(users["evaluator"])
    _, elsewhere = _sample(users["evaluator"])

    with pytest.raises(Http404):
        entry_for_evaluator(sample, elsewhere.output.public_id)
