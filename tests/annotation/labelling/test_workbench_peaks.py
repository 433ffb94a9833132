"""The workbench carries the take's waveform peaks (issue 46), so the waveform is drawn without
downloading the audio; a take without readable audio still opens, without peaks."""

from __future__ import annotations

import json
import re
from typing import Any

from django.urls import reverse

from annotation.audio.peaks import block_peaks
from annotation.recording.models import Take
from annotation.recording.takes import wav_samples
from tests.annotation.labelling.support import LabellingItemFactory, assign
from webapp.storage import read_media


def page_peaks(html: str) -> Any:
    found = re.search(r'<script id="waveform-peaks" type="application/json">(.*?)</script>', html, re.S)
    assert found, "the page has no waveform-peaks script"
    return json.loads(found.group(1))


def test_the_workbench_carries_the_takes_peaks(users: Any, client_for: Any, media_root: Any) -> None:
    item = LabellingItemFactory.create()
    (mine,) = assign(item, users["annotator"])

    response = client_for("annotator").get(reverse("annotation:workbench", args=[mine.pk]))

    assert response.status_code == 200
    take = item.recording
    assert take is not None
    peaks = page_peaks(response.content.decode())
    samples, sample_rate = wav_samples(read_media(take.audio_key))
    assert peaks["data"] == block_peaks(samples, peaks["samples_per_pixel"])
    assert abs(peaks["duration"] - len(samples) / sample_rate) < 1e-9
    # Made once (the take predates peaks): kept with the take for every later page.
    assert Take.objects.get(pk=take.pk).peaks is not None


def test_a_take_without_readable_audio_opens_without_peaks(
    users: Any, client_for: Any, media_root: Any
) -> None:
    item = LabellingItemFactory.create(recording__audio_key="audio/take/gone.wav")
    (mine,) = assign(item, users["annotator"])

    response = client_for("annotator").get(reverse("annotation:workbench", args=[mine.pk]))

    assert response.status_code == 200
    assert page_peaks(response.content.decode()) is None


def test_a_reviewer_gets_neither_the_workbench_nor_its_peaks(
    users: Any, client_for: Any, media_root: Any
) -> None:
    (mine,) = assign(LabellingItemFactory.create(), users["annotator"])

    response = client_for("reviewer").get(reverse("annotation:workbench", args=[mine.pk]))

    assert response.status_code in (302, 403, 404) and b"waveform-peaks" not in response.content
