"""The demo's annotators start from a draft of the ToM fields that says what it is: a fixed
template per emotion, not a model (issue 41)."""

from __future__ import annotations

from annotation.demo.items import DEMO_ITEMS
from annotation.demo.labels import DEMO_DRAFT_SOURCE, demo_tom, draft_from_template
from annotation.labelling.models import MachineDraft
from annotation.labelling.workflows import open_annotation
from tests.annotation.labelling.support import LabellingItemFactory, assign


def test_a_demo_item_left_to_annotate_starts_from_the_marked_template_draft(db: None, users) -> None:
    demo = DEMO_ITEMS[0]
    item = LabellingItemFactory.create()
    draft_from_template(item, demo)
    draft_from_template(item, demo)  # seeding again adds none
    (draft,) = MachineDraft.objects.filter(item=item)
    assert draft.model_name == DEMO_DRAFT_SOURCE and "demo draft" in draft.model_name and draft.ok
    (annotation,) = assign(item, users["annotator"])
    opened = open_annotation(annotation)
    assert opened.machine_draft == draft
    assert opened.tom["context"] == demo_tom(demo)["context"]
