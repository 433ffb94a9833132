"""The measured intensity and gender drafts on the workbench: shown as drafts with their bench
accuracy, filling only empty fields, never replacing a person's label."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.audio.voice_drafts import DRAFT_ACCURACY
from annotation.labelling.models import Annotation
from annotation.recording.models import Item


@pytest.fixture
def drafted(item: Item) -> Item:
    recording = item.recording
    assert recording is not None
    recording.features = {**recording.features, "intensity_draft": "high", "gender_draft": "female"}
    recording.save(update_fields=["features"])
    return item


def test_intensity_and_gender_appear_as_drafts_with_their_measured_accuracy(
    client_as, drafted, annotations
) -> None:
    annotation = annotations[0]
    page = client_as(annotation.annotator).get(reverse("annotation:workbench", args=[annotation.pk]))

    text = page.content.decode()
    intensity = f"{DRAFT_ACCURACY['intensity']:.0%}"
    gender = f"{DRAFT_ACCURACY['gender']:.0%}"
    assert (
        'data-testid="suggestion-intensity">analysis suggests high <small class="muted">'
        f"(a draft: right on {intensity} of the bench set)</small>" in text
    )
    assert 'data-testid="gender-draft">analysis suggests a female voice' in text
    assert f"right on {gender} of the bench set" in text
    annotation.refresh_from_db()
    # The intensity draft pre-fills the empty field as a suggestion (the person confirms or
    # changes it; `changed_from_draft` tracks which); gender is no label field and stays out.
    assert annotation.suggestions["intensity"] == "high"
    assert annotation.perception["intensity"] == "high"
    assert "gender" not in annotation.perception and "gender" not in annotation.suggestions


def test_a_persons_label_is_never_replaced_by_a_draft(client_as, drafted, annotations) -> None:
    annotation = annotations[0]
    Annotation.objects.filter(pk=annotation.pk).update(perception={"intensity": "low", "pitch": "normal"})

    client_as(annotation.annotator).get(reverse("annotation:workbench", args=[annotation.pk]))

    annotation.refresh_from_db()
    assert annotation.status == Annotation.Status.DRAFT
    assert annotation.suggestions["intensity"] == "high" and annotation.suggestions["pitch"] == "high"
    # the person's intensity and pitch stand; the empty fields took the suggestions
    assert (annotation.perception["intensity"], annotation.perception["pitch"]) == ("low", "normal")
    assert annotation.perception["rate"] == "low" and annotation.perception["intonation"] == "falling"


def test_no_draft_no_note(client_as, annotations) -> None:
    annotation = annotations[0]
    page = client_as(annotation.annotator).get(reverse("annotation:workbench", args=[annotation.pk]))

    assert 'data-testid="gender-draft"' not in page.content.decode()
    assert 'data-testid="suggestion-intensity"' not in page.content.decode()
