"""Every recorded item gets N annotators, spread evenly, never leads (unless listed) nor the performer."""

from __future__ import annotations

from collections import Counter

import pytest

from annotation.labelling.assignment import assign_annotators, assign_waiting_items
from annotation.labelling.models import Annotation, AnnotationProject
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory
from webapp.roles import Role


@pytest.fixture
def annotators(make_user):
    return [make_user(Role.ANNOTATOR, f"ann{i}") for i in range(1, 6)]


def test_items_get_three_annotators_spread_evenly(db: None, annotators, make_user) -> None:
    make_user(Role.LEAD_ANNOTATOR, "lead")
    items = [LabellingItemFactory.create(external_id=f"EE-{n:04d}", recording=None) for n in range(10)]
    results = assign_waiting_items()
    assert [len(result.assigned) for result in results] == [3] * 10
    per_item = Counter(Annotation.objects.values_list("item_id", flat=True))
    assert set(per_item.values()) == {3}
    per_annotator = Counter(Annotation.objects.values_list("annotator__username", flat=True))
    # 30 annotations over 5 annotators: 6 each; the lead adjudicates and is never assigned.
    assert per_annotator == {f"ann{i}": 6 for i in range(1, 6)}
    assert set(Item.objects.filter(pk__in=[i.pk for i in items]).values_list("state", flat=True)) == {
        "annotating"
    }


def test_assigning_again_tops_up_and_never_duplicates(db: None, annotators) -> None:
    item = LabellingItemFactory.create(recording=None)
    Annotation.objects.create(item=item, annotator=annotators[0])
    result = assign_annotators(item)
    assert len(result.assigned) == 2
    assert annotators[0].pk not in result.assigned
    assert assign_annotators(item).assigned == []
    assert item.annotations.count() == 3


def test_the_performer_never_labels_their_own_take(db: None, make_user) -> None:
    item = LabellingItemFactory.create()
    assert item.recording is not None
    performer = item.recording.actor
    from webapp.roles import grant_role

    grant_role(performer, Role.ANNOTATOR)
    others = [make_user(Role.ANNOTATOR, f"other{i}") for i in range(3)]
    result = assign_annotators(item)
    assert sorted(result.assigned) == sorted(user.pk for user in others)


def test_a_project_sets_n_and_its_own_pool(db: None, annotators, make_user) -> None:
    lead = make_user(Role.LEAD_ANNOTATOR, "lead")
    pilot = AnnotationProject.objects.create(name="Pilot", annotators_per_item=2, splits=["dev"], priority=1)
    pilot.annotators.set([annotators[4], lead])
    dev = LabellingItemFactory.create(external_id="EE-DEV", recording=None)
    Item.objects.filter(pk=dev.pk).update(split="dev")
    test_item = LabellingItemFactory.create(external_id="EE-TEST", recording=None)
    assert sorted(assign_annotators(dev).assigned) == sorted([annotators[4].pk, lead.pk])
    assert len(assign_annotators(test_item).assigned) == 3  # the default project


def test_a_small_pool_reports_the_shortfall(db: None, make_user) -> None:
    make_user(Role.ANNOTATOR, "only")
    result = assign_annotators(LabellingItemFactory.create(recording=None))
    assert (len(result.assigned), result.wanted, result.shortfall) == (1, 3, 2)
