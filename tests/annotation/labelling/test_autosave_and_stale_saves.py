"""Work is never lost: autosave, reload restores, a stale save is refused, submit keeps a revision."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.labelling.models import Annotation, AnnotationRevision
from tests.annotation.labelling.support import form_data, perception, submitted, tom


@pytest.fixture
def ana_annotation(annotations):
    return annotations[0]


def workbench(client, annotation):
    return client.get(reverse("annotation:workbench", args=[annotation.pk]))


@pytest.fixture
def opened(client_as, ana_annotation):
    """The annotator's client after opening the workbench once, which starts the draft."""
    client = client_as(ana_annotation.annotator)
    workbench(client, ana_annotation)
    ana_annotation.refresh_from_db()
    return client


def submit(client, annotation, perception_doc, tom_doc):
    return client.post(
        reverse("annotation:submit_annotation", args=[annotation.pk]),
        form_data(perception_doc, tom_doc, annotation.version),
    )


def test_opening_prefills_acoustic_suggestions_once(client_as, ana_annotation) -> None:
    client = client_as(ana_annotation.annotator)
    page = workbench(client, ana_annotation)
    assert page.status_code == 200
    ana_annotation.refresh_from_db()
    assert ana_annotation.status == Annotation.Status.DRAFT
    assert ana_annotation.suggestions == {
        "pitch": "high",
        "energy": "normal",
        "rate": "low",
        "intonation": "falling",
    }
    assert ana_annotation.perception["pitch"] == "high"
    assert b'data-testid="suggestion-pitch">analysis suggests high' in page.content
    version = ana_annotation.version
    workbench(client, ana_annotation)
    ana_annotation.refresh_from_db()
    assert ana_annotation.version == version  # a second visit changes nothing


def test_autosave_then_reload_restores_the_draft(opened, ana_annotation) -> None:
    client = opened
    half_done = perception(situation="Half-written thought", emotion="", stressed_words=["love"])
    response = client.post(
        reverse("annotation:autosave", args=[ana_annotation.pk]),
        form_data(half_done, tom(context=""), ana_annotation.version),
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert f'name="version" value="{ana_annotation.version + 1}"'.encode() in response.content
    assert b"Draft saved" in response.content
    page = workbench(client, ana_annotation).content.decode()
    assert "Half-written thought" in page
    assert "&quot;love&quot;" in page  # the stressed words are back in the hidden field
    assert 'value="angry" checked' not in page  # the emptied emotion stays empty


def test_a_save_from_an_older_version_is_refused_with_a_clear_message(opened, ana_annotation) -> None:
    first_tab = opened
    shown = ana_annotation.version
    # A second tab saves first...
    second = first_tab.post(
        reverse("annotation:autosave", args=[ana_annotation.pk]),
        form_data(perception(situation="from the second tab"), tom(), shown),
    )
    assert second.status_code == 200
    # ...so the first tab's save, still made from the older version, must not overwrite it.
    stale = first_tab.post(
        reverse("annotation:autosave", args=[ana_annotation.pk]),
        form_data(perception(situation="from the first tab"), tom(), shown),
    )
    assert stale.status_code == 409
    text = stale.content.decode()
    assert "saved from another tab or window" in text
    assert "Reload" in text
    assert 'data-stale="true"' in text
    ana_annotation.refresh_from_db()
    assert ana_annotation.perception["situation"] == "from the second tab"


def test_a_tab_s_own_earlier_save_is_no_conflict_but_another_tab_s_is(opened, ana_annotation) -> None:
    """The page a reload replaced saved on its way out (page-hide) after the reloaded page was made
    from the older version: that save was this tab's, so the next one is written over it."""
    url = reverse("annotation:autosave", args=[ana_annotation.pk])
    shown = ana_annotation.version

    def save(situation: str, version: int, tab: str):
        return opened.post(
            url, {**form_data(perception(situation=situation), tom(), version), "page_session": tab}
        )

    assert save("sent on the way out", shown, "tab-a").status_code == 200  # the old page's beacon
    echo = save("restored after the reload", shown, "tab-a")  # the reloaded page, made from `shown`
    assert echo.status_code == 200 and b"another tab" not in echo.content
    ana_annotation.refresh_from_db()
    assert ana_annotation.version == shown + 2 and ana_annotation.saved_from == "tab-a"
    assert ana_annotation.perception["situation"] == "restored after the reload"

    other = save("from a second tab", shown + 1, "tab-b")  # another tab, one version behind
    assert other.status_code == 409 and b"saved from another tab or window" in other.content
    nameless = save("from a page without an id", shown + 1, "")
    assert nameless.status_code == 409
    ana_annotation.refresh_from_db()
    assert ana_annotation.perception["situation"] == "restored after the reload"


def test_the_api_refuses_stale_saves_too(client_as, ana_annotation) -> None:
    client = client_as(ana_annotation.annotator)
    url = reverse("annotation:api_annotation", args=[ana_annotation.pk])
    version = client.get(url).json()["version"]
    body = {"version": version, "perception": perception(), "tom": tom()}
    assert client.put(url, body, content_type="application/json").status_code == 200
    refused = client.put(url, body, content_type="application/json")
    assert refused.status_code == 409
    assert refused.json()["current_version"] == version + 1


def test_submit_keeps_a_revision_and_moves_to_the_next_item(opened, ana_annotation) -> None:
    response = submit(opened, ana_annotation, perception(), tom())
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:annotator_queue")
    ana_annotation.refresh_from_db()
    assert ana_annotation.status == Annotation.Status.SUBMITTED
    assert ana_annotation.perception == perception()
    revisions = list(AnnotationRevision.objects.filter(annotation=ana_annotation))
    assert [(r.version, r.perception["situation"]) for r in revisions] == [
        (ana_annotation.version, perception()["situation"])
    ]
    # The annotator changed no suggestion: pitch/energy/rate/intonation were kept as suggested.
    assert ana_annotation.changed_from_draft == []


def test_an_incomplete_submit_keeps_the_draft_and_says_what_is_missing(opened, ana_annotation) -> None:
    response = submit(opened, ana_annotation, perception(situation="", polarity=""), tom())
    assert response.status_code == 422
    assert b'data-testid="problems"' in response.content
    assert b"Write a few words." in response.content
    ana_annotation.refresh_from_db()
    assert ana_annotation.status == Annotation.Status.DRAFT
    assert ana_annotation.tom["core_demand"] == tom()["core_demand"]  # the rest was saved


def test_reopening_makes_a_submitted_annotation_editable_and_keeps_history(client_as, ana_annotation) -> None:
    done = submitted(ana_annotation)
    client = client_as(done.annotator)
    assert b"Reopen to revise" in workbench(client, done).content
    refused = client.post(
        reverse("annotation:autosave", args=[done.pk]), form_data(perception(), tom(), done.version)
    )
    assert refused.status_code == 400
    assert b"Already submitted" in refused.content
    client.post(reverse("annotation:reopen_annotation", args=[done.pk]), {"version": done.version})
    done.refresh_from_db()
    assert done.status == Annotation.Status.DRAFT
    assert done.revisions.count() == 1


def autosave(client, annotation, perception_doc, tom_doc):
    return client.post(
        reverse("annotation:autosave", args=[annotation.pk]),
        form_data(perception_doc, tom_doc, annotation.version),
    )


def test_autosave_keeps_unfinished_segments_and_reports_them_by_name(opened, ana_annotation) -> None:
    unfinished = [
        {"start": 0.0, "end": 0.8, "emotion": "", "words": "Oh gre"},
        {"start": 0.9, "end": 0.4, "emotion": "", "words": ""},  # an end typed before its start
    ]
    response = autosave(
        opened, ana_annotation, perception(emotion_segments=unfinished, situation="Half"), tom()
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert "Draft saved" in text
    assert "Emotion segments: Segment 1 needs an emotion." in text
    assert "Emotion segments: Segment 2 needs a start before its end." in text
    assert "perception." not in text
    ana_annotation.refresh_from_db()
    assert ana_annotation.perception["emotion_segments"] == unfinished
    assert ana_annotation.perception["situation"] == "Half"
    page = workbench(opened, ana_annotation).content.decode()
    assert 'data-testid="open-problems"' in page and "Segment 1 needs an emotion." in page


def test_autosave_still_refuses_what_no_page_can_send(opened, ana_annotation) -> None:
    malformed = [{"start": 0.0, "end": 0.8, "emotion": "furious", "words": ""}]
    response = autosave(opened, ana_annotation, perception(emotion_segments=malformed), tom())
    assert response.status_code == 400
    assert (
        "Not saved: Emotion segments: Segment 1: &#x27;furious&#x27; is not an emotion."
        in response.content.decode()
    )


def test_submit_names_fields_as_people_read_them(opened, ana_annotation) -> None:
    unfinished = [{"start": 0.0, "end": 0.8, "emotion": "", "words": ""}]
    response = submit(opened, ana_annotation, perception(polarity="", emotion_segments=unfinished), tom())
    assert response.status_code == 422
    text = response.content.decode()
    assert "Polarity: Choose a value." in text
    assert "Emotion segments: Segment 1 needs an emotion." in text
    assert "perception.polarity" not in text and "perception.emotion_segments" not in text


def test_the_workbench_script_is_told_where_to_go_after_a_submit(opened, ana_annotation) -> None:
    # The script submits with fetch; a redirect it followed itself would eat the next page's
    # "Submitted" message, so it is told the address (HX-Redirect) and goes there.
    response = opened.post(
        reverse("annotation:submit_annotation", args=[ana_annotation.pk]),
        form_data(perception(), tom(), ana_annotation.version),
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("annotation:annotator_queue")
    ana_annotation.refresh_from_db()
    assert ana_annotation.is_submitted
