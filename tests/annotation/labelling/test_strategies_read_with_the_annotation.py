"""The workbench reads the strategy taxonomy with the annotation: the same strategies, in the same
order, as a query of their own would give (issue 27)."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.labelling.access import own_annotation
from annotation.labelling.models import Strategy, strategies_read_with
from tests.annotation.labelling.support import LabellingItemFactory, assign
from webapp.roles import Role

pytestmark = pytest.mark.django_db


def _fields(strategies: list[Strategy]) -> list[tuple[Any, ...]]:
    return [(s.pk, s.slug, s.name, s.description, s.active, s.position) for s in strategies]


def test_the_taxonomy_read_with_the_annotation_is_the_taxonomy(make_user: Any) -> None:
    Strategy.objects.create(slug="zz-first", name="Zz first by position", position=0)
    Strategy.objects.create(slug="tie-b", name="Tie b", position=5, active=False)
    Strategy.objects.create(slug="tie-a", name="Tie a", position=5, description="same position, by name")
    annotator = make_user(Role.ANNOTATOR)
    annotation = assign(LabellingItemFactory.create(), annotator)[0]

    read = own_annotation(annotator, annotation.pk, with_strategies=True)

    assert _fields(strategies_read_with(read) or []) == _fields(list(Strategy.objects.all()))
    assert strategies_read_with(own_annotation(annotator, annotation.pk)) is None  # read without them


def test_no_strategy_at_all_reads_as_none_listed(make_user: Any) -> None:
    Strategy.objects.all().delete()
    annotator = make_user(Role.ANNOTATOR)
    annotation = assign(LabellingItemFactory.create(), annotator)[0]

    assert strategies_read_with(own_annotation(annotator, annotation.pk, with_strategies=True)) == []
