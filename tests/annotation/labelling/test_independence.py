"""Annotators never see each other's labels: not in pages, not in the API, not by guessing ids."""

from __future__ import annotations

from django.urls import reverse

from tests.annotation.labelling.support import perception, submitted, tom

BEN_SECRET = "ben-only-situation-marker"
BEN_CAPTION = "ben-only-caption-marker"


def ana_sees(client, ana_annotation, ben_annotation) -> str:
    """Return everything Ana's pages and API answer, concatenated."""
    pages = [
        client.get(reverse("annotation:annotator_queue")),
        client.get(reverse("annotation:annotator_queue") + "?show=submitted"),
        client.get(reverse("annotation:workbench", args=[ana_annotation.pk])),
        client.get(reverse("annotation:api_annotations")),
        client.get(reverse("annotation:api_annotation", args=[ana_annotation.pk])),
    ]
    assert all(page.status_code == 200 for page in pages)
    return "".join(page.content.decode() for page in pages)


def test_another_annotators_labels_never_reach_an_annotator(client_as, annotations) -> None:
    ana_annotation, ben_annotation, _ = annotations
    submitted(ben_annotation, perception=perception(situation=BEN_SECRET, prosody_caption=BEN_CAPTION))
    ana = client_as(ana_annotation.annotator)
    # Before Ana submits:
    seen = ana_sees(ana, ana_annotation, ben_annotation)
    assert BEN_SECRET not in seen and BEN_CAPTION not in seen
    assert "ben" not in ana.get(reverse("annotation:api_annotations")).content.decode()
    # Ben's rows answer as if they did not exist.
    assert ana.get(reverse("annotation:workbench", args=[ben_annotation.pk])).status_code == 404
    assert ana.get(reverse("annotation:api_annotation", args=[ben_annotation.pk])).status_code == 404
    assert (
        ana.post(reverse("annotation:autosave", args=[ben_annotation.pk]), {"version": "1"}).status_code
        == 404
    )
    # After Ana submits too, her pages still show only her own work.
    submitted(ana_annotation, perception=perception(situation="ana's own view"), tom=tom())
    seen = ana_sees(ana, ana_annotation, ben_annotation)
    assert BEN_SECRET not in seen and BEN_CAPTION not in seen
    assert "ana&#x27;s own view" in seen or "ana's own view" in seen


def test_the_api_lists_only_the_callers_annotations(client_as, annotations) -> None:
    ana_annotation = annotations[0]
    listing = client_as(ana_annotation.annotator).get(reverse("annotation:api_annotations")).json()
    assert [row["id"] for row in listing["results"]] == [ana_annotation.pk]


def test_annotators_cannot_open_the_lead_pages(client_as, annotations) -> None:
    ana = client_as(annotations[0].annotator)
    item = annotations[0].item
    assert ana.get(reverse("annotation:adjudicate", args=[item.pk])).status_code == 403
    assert ana.get(reverse("annotation:adjudication_queue")).status_code == 403
    assert ana.get(reverse("annotation:agreement")).status_code == 403
