"""Output queries (a benchmark version's outputs), the systems page report, and the blindness helpers."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.outputs.access import blind_audio_url, query_audio_url, systems_named_in
from evaluation.outputs.models import ModelOutput, System
from evaluation.outputs.reports import deletion_counts, system_rows
from tests.factories import ItemFactory, JudgementFactory, ModelOutputFactory, SystemFactory

pytestmark = pytest.mark.django_db


def test_outputs_of_a_version_leave_other_versions_out() -> None:
    system = SystemFactory.create(text_only=True)
    mine = ModelOutputFactory.create(system=system, benchmark_version="v2")
    ModelOutputFactory.create(system=system, benchmark_version="v1")

    assert list(ModelOutput.objects.for_version("v2")) == [mine]
    assert ModelOutput.objects.benchmark_versions() == ["v1", "v2"]


def _outputs(n_systems: int, n_versions: int) -> None:
    for s in range(n_systems):
        system = SystemFactory.create(
            text_only=True, category=System.Category.OMNI if s % 2 else System.Category.GENERAL
        )
        for v in range(n_versions):
            ModelOutputFactory.create(system=system, benchmark_version=f"v{v}")


def _queries_of_system_rows() -> int:
    with CaptureQueriesContext(connection) as queries:
        system_rows()
    return len(queries)


def test_the_systems_page_counts_outputs_per_version_in_a_fixed_number_of_queries() -> None:
    _outputs(n_systems=1, n_versions=1)
    few = _queries_of_system_rows()
    _outputs(n_systems=5, n_versions=3)
    assert _queries_of_system_rows() == few

    rows = system_rows()
    assert [row.system.category for row in rows] == sorted(row.system.category for row in rows)
    assert rows[-1].versions == [("v0", 1), ("v1", 1), ("v2", 1)]


def _judged_system(n_outputs: int, stages: tuple[str, ...]) -> System:
    """A text-only system with n outputs, each judged on the given stages."""
    system = SystemFactory.create(text_only=True)
    for _ in range(n_outputs):
        output = ModelOutputFactory.create(system=system)
        for stage in stages:
            JudgementFactory.create(output=output, stage=stage, score=5.0)
    return system


def _queries_of_deletion_counts(system: System) -> int:
    with CaptureQueriesContext(connection) as queries:
        deletion_counts(system)
    return len(queries)


def test_what_deleting_a_system_takes_is_counted_in_a_fixed_number_of_queries() -> None:
    small = _judged_system(n_outputs=1, stages=("perception",))
    few = _queries_of_deletion_counts(small)
    large = _judged_system(n_outputs=4, stages=("perception", "reasoning", "response_content"))
    ModelOutputFactory.create(system=large)  # not judged yet
    _judged_system(n_outputs=2, stages=("perception",))  # another system's

    assert _queries_of_deletion_counts(large) == few
    assert deletion_counts(small) == {"outputs": 1, "judgements": 1}
    assert deletion_counts(large) == {"outputs": 5, "judgements": 12}


def test_text_shown_to_raters_is_checked_for_system_names_and_codes() -> None:
    named, coded, absent = (
        SystemFactory.create(name="Qwen"),
        SystemFactory.create(name="Other"),
        SystemFactory.create(name="Absent"),
    )

    text = f"Compare qwen with {coded.anonymous_code}; QwenLike is a different word."

    assert systems_named_in(text, [named, coded, absent]) == ["Qwen", "Other"]


def test_blind_links_are_empty_without_audio_and_hide_the_stored_key(users) -> None:
    item = ItemFactory.create()
    evaluator = users["evaluator"]

    assert blind_audio_url("", evaluator) == "" and query_audio_url(item, evaluator) == ""
    assert "model_output" not in blind_audio_url("audio/model_output/abc.wav", evaluator)
