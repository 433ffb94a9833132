"""A rubric sample's name reaches evaluators, so it gets the system-name check a study title gets."""

from __future__ import annotations

import pytest

from evaluation.judging.human_scoring import SampleError, draw_rubric_sample
from evaluation.judging.models import RubricSample
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import ModelOutputFactory
from webapp.models import User

pytestmark = pytest.mark.usefixtures("media_root")


@pytest.fixture
def secret(users: dict[str, User]) -> System:
    system = System.objects.create(name="Qwen3-Omni-Hidden", category=System.Category.OMNI)
    ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    return system


def _draw(name: str, users: dict[str, User]) -> RubricSample:
    return draw_rubric_sample(
        name=name, benchmark_version="echoeval-v1", n_items=1, evaluators=[users["evaluator"]], seed=1
    )


@pytest.mark.parametrize("name", ["qwen3-omni-hidden vs the rest", "pilot: Qwen3-Omni-Hidden"])
def test_a_name_that_names_a_system_is_refused(secret: System, users: dict[str, User], name: str) -> None:
    with pytest.raises(SampleError, match="names Qwen3-Omni-Hidden"):
        _draw(name, users)
    assert not RubricSample.objects.exists()


def test_a_name_with_a_systems_anonymous_code_is_refused(secret: System, users: dict[str, User]) -> None:
    with pytest.raises(SampleError, match="evaluators must not learn"):
        _draw(f"pilot {secret.anonymous_code}", users)


def test_a_neutral_name_is_drawn(secret: System, users: dict[str, User]) -> None:
    assert _draw("pilot, March", users).entries.count() == 1
