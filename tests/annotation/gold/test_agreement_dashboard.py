"""The agreement dashboard shows numbers and chart data, per scenario."""

from __future__ import annotations

from django.urls import reverse

from annotation.gold.adjudication import adjudicate_item
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, perception, submitted, tom


def test_numbers_and_charts_filtered_by_scenario(client_for, users, trio) -> None:
    sarcastic = LabellingItemFactory.create(external_id="EE-0001", recording=None)
    neutral = LabellingItemFactory.create(external_id="EE-0002", scenario="audio-dominant", recording=None)
    emotions = {sarcastic: ["angry", "angry", "sad"], neutral: ["neutral", "neutral", "neutral"]}
    for item, per_annotator in emotions.items():
        for annotator, emotion in zip(trio, per_annotator, strict=True):
            submitted(
                Annotation.objects.create(item=item, annotator=annotator),
                perception=perception(emotion=emotion),
            )
        Item.objects.filter(pk=item.pk).update(state=Item.State.ANNOTATING)
    adjudicate_item(
        sarcastic.pk, lead=users["lead"], perception=perception(), tom=tom(), expected_gold_version=0
    )

    lead = client_for("lead")
    page = lead.get(reverse("annotation:agreement"))
    assert page.status_code == 200
    assert "6 submitted annotations of 2 items; 1 with gold." in page.content.decode()
    data = page.context["chart_data"]
    assert data["annotators"]["labels"] == ["ana", "ben", "cleo"]
    # Against gold (sarcastic item only): cleo's emotion is wrong, one of five categorical fields.
    assert data["annotators"]["with_gold"][2] < data["annotators"]["with_gold"][0] == 1.0

    only_neutral = lead.get(reverse("annotation:agreement"), {"scenario": "audio-dominant"})
    text = only_neutral.content.decode()
    assert "3 submitted annotations of 1 item; 0 with gold." in text
    assert "only one item has two annotations: alpha needs two or more" in text
    assert client_for("admin").get(reverse("annotation:agreement")).status_code == 200
