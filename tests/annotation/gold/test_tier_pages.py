"""Tiers in and out through the pages: a take's TextGrid/EAF with its gold labels (one item and a
zip of all), imported back as a machine draft the workbench starts from; who may and who may not."""

from __future__ import annotations

import io
import time
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.audio.speech.tiers import read_tier_file
from annotation.gold.models import GoldReference
from annotation.labelling import workflows
from annotation.labelling.models import TIER_FILE_DRAFT, Annotation, MachineDraft
from annotation.labelling.tier_labels import draft_from_tiers
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, assign, perception, tom
from webapp.lib.archives import ARCHIVE_TIME

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

ALIGNED = [
    {"text": "oh", "start": 0.104, "end": 0.31},
    {"text": "great", "start": 0.31, "end": 0.702},
    {"text": "another", "start": 0.75, "end": 1.013},
    {"text": "monday", "start": 1.013, "end": 1.468},
]
SEGMENTS = [
    {"start": 0.1, "end": 0.72, "emotion": "happy", "words": "oh great"},
    {"start": 0.72, "end": 1.5, "emotion": "sad", "words": "another monday"},
]


@pytest.fixture
def item() -> Item:
    item = LabellingItemFactory.create(external_id="EE-0042", scenario="emotion-shift")
    take = item.recording
    assert take is not None
    take.qc = {"speech": {"words": ALIGNED}}
    take.save()
    labels = perception(stressed_words=["great", "Monday"], intonation="rising", emotion_segments=SEGMENTS)
    GoldReference.objects.add_current_version(item, perception=labels, tom=tom())
    return item


def _download(client, item: Item, format_name: str) -> tuple[int, bytes]:
    response = client.get(
        reverse("annotation:item_tiers_download", args=[item.pk]) + f"?format={format_name}"
    )
    return response.status_code, response.content


@pytest.mark.parametrize(("format_name", "name"), [("textgrid", "EE-0042.TextGrid"), ("eaf", "EE-0042.eaf")])
def test_a_take_exported_and_imported_again_is_the_same_draft(client_for, item, format_name, name) -> None:
    lead = client_for("lead")
    status, data = _download(lead, item, format_name)
    assert status == 200
    draft = draft_from_tiers(read_tier_file(name, data), 1.5)
    assert [(w["text"], round(w["start"], 3), round(w["end"], 3)) for w in draft.words] == [
        (w["text"], w["start"], w["end"]) for w in ALIGNED
    ]
    response = lead.post(
        reverse("annotation:tier_import"), {"item": "EE-0042", "tiers": SimpleUploadedFile(name, data)}
    )
    assert response.status_code == 302
    stored = MachineDraft.objects.get(item=item, prompt_version=TIER_FILE_DRAFT)
    assert stored.perception["stressed_words"] == ["great", "Monday"]
    assert stored.perception["intonation"] == "rising"
    assert [
        (round(s["start"], 3), round(s["end"], 3), s["emotion"], s["words"])
        for s in stored.perception["emotion_segments"]
    ] == [(s["start"], s["end"], s["emotion"], s["words"]) for s in SEGMENTS]
    # A draft, never an annotation or gold.
    assert not Annotation.objects.exists() and GoldReference.objects.filter(item=item).count() == 1


def test_the_workbench_starts_from_the_tier_draft_and_says_so(client_for, users, item) -> None:
    tier_draft = MachineDraft.objects.create(
        item=item,
        model_name="take.TextGrid (uploaded by lead)",
        prompt_version=TIER_FILE_DRAFT,
        perception={"stressed_words": ["great"], "intonation": "rising"},
    )
    (annotation,) = assign(item, users["annotator"])
    opened = workflows.open_annotation(annotation)
    assert opened.perception["stressed_words"] == ["great"] and opened.perception["intonation"] == "rising"
    assert opened.machine_draft is None and opened.tier_draft == tier_draft  # the ToM draft stays the LLM's
    page = client_for("annotator").get(reverse("annotation:workbench", args=[annotation.pk])).content.decode()
    assert (
        "Perception drafted from a tier file (take.TextGrid (uploaded by lead)): stressed great; intonation rising"
        in page
    )


def test_a_file_with_a_tier_that_cannot_be_placed_imports_nothing_and_says_why(client_for, item) -> None:
    data = (
        b'File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n1.5\n<exists>\n1\n'
        b'"IntervalTier"\n"phones"\n0\n1.5\n1\n0\n1\n"AH"\n'
    )
    response = client_for("lead").post(
        reverse("annotation:tier_import"),
        {"item": "EE-0042", "tiers": SimpleUploadedFile("take.TextGrid", data)},
        follow=True,
    )
    assert "tier &#x27;phones&#x27; cannot be placed" in response.content.decode()
    assert not MachineDraft.objects.exists()
    stressed = (
        b'File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n1.5\n<exists>\n1\n'
        b'"IntervalTier"\n"stressed"\n0\n1.5\n1\n0\n1\n"Tuesday"\n'
    )
    response = client_for("lead").post(
        reverse("annotation:tier_import"),
        {"item": "EE-0042", "tiers": SimpleUploadedFile("take.TextGrid", stressed)},
        follow=True,
    )
    assert "Not words of the script: Tuesday" in response.content.decode()
    assert not MachineDraft.objects.exists()


def test_the_zip_holds_every_take_and_withholds_gold_its_reader_still_labels(client_for, users, item) -> None:
    response = client_for("admin").get(reverse("annotation:tiers_download") + "?format=eaf")
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        assert archive.namelist() == ["EE-0042.eaf"]
        assert b">rising<" in archive.read("EE-0042.eaf")
    assign(item, users["lead"])  # the lead now labels the item: its gold is hidden from them
    response = client_for("lead").get(reverse("annotation:tiers_download") + "?format=textgrid")
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        text = archive.read("EE-0042.TextGrid").decode()
    assert '"monday"' in text and "rising" not in text and "happy" not in text
    _, single = _download(client_for("lead"), item, "textgrid")
    assert b"rising" not in single and b'"great"' in single


def test_the_same_tiers_download_as_the_same_bytes(client_for, item, monkeypatch) -> None:
    url = reverse("annotation:tiers_download") + "?format=textgrid"
    first = client_for("admin").get(url).content
    # a later download (the clock a day on) is the same file: no member carries the time it was made
    later = time.time() + 86_400
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(time, "localtime", lambda seconds=None: time.gmtime(later))
    assert client_for("admin").get(url).content == first
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert {member.date_time for member in archive.infolist()} == {ARCHIVE_TIME}
        assert {member.compress_type for member in archive.infolist()} == {zipfile.ZIP_DEFLATED}


@pytest.mark.parametrize("role", ["annotator", "reviewer", "actor", "evaluator", "norole"])
def test_only_gold_keepers_may_export_or_import_tiers(client_for, item, role) -> None:
    client = client_for(role)
    assert _download(client, item, "textgrid")[0] in (302, 403)
    assert client.get(reverse("annotation:tiers_download")).status_code in (302, 403)
    response = client.post(
        reverse("annotation:tier_import"), {"item": "EE-0042", "tiers": SimpleUploadedFile("a.eaf", b"<x/>")}
    )
    assert response.status_code in (302, 403) and not MachineDraft.objects.exists()
    assert _download(client_for("lead"), item, "pdf")[0] == 404
