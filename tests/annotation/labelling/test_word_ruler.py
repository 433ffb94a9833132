"""Under the waveform of the workbench and the adjudication page: the take's aligned words (the
speech check's forced alignment), its speaking rate in phones per second, and the words that
sound stressed, offered as suggestions and never as labels."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.test import Client
from django.urls import reverse

from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from webapp.models import User

# "great" takes twice the median word's time per phone and peaks 6 dB above it: longer, louder.
WORDS = [
    {"text": "oh", "start": 0.0, "end": 0.2, "relative_score": 1.0, "phones": 2},
    {"text": "great", "start": 0.2, "end": 0.8, "relative_score": 1.1, "phones": 3},
    {"text": "another", "start": 0.8, "end": 1.3, "relative_score": 0.9, "phones": 5},
    {"text": "monday", "start": 1.3, "end": 1.8, "relative_score": 1.0, "phones": 5},
]
TIMES = [0.1, 0.5, 1.0, 1.5]
CONTOURS = {
    "pitch": {"times": TIMES, "hz": [200.0, 200.0, 200.0, 200.0]},
    "intensity": {"times": TIMES, "db": [60.0, 66.0, 60.0, 60.0]},
}
QC = {"duration_seconds": 1.9, "speech": {"words": WORDS, "phones_per_second": 8.33}}


def timed_item() -> object:
    return LabellingItemFactory.create(recording__qc=QC, recording__contours=CONTOURS)


def test_the_workbench_shows_the_words_at_their_times_the_rate_and_stress_suggestions(
    users: dict[str, User],
) -> None:
    (annotation,) = assign(timed_item(), users["annotator"])  # type: ignore[arg-type]
    client = Client()
    client.force_login(users["annotator"])

    page = client.get(reverse("annotation:workbench", args=[annotation.pk])).content.decode()

    assert 'data-testid="word-ruler"' in page and "js/word_ruler.js" in page
    assert re.search(r'<li data-start="0.2" data-end="0.8" class="stress-candidate"[^>]*>great <small', page)
    assert '<li data-start="0.8" data-end="1.3" title="another: 0.80–1.30 s">another' in page
    assert "Speaking rate: 8.3 phones/s (over speech, pauses left out)" in page
    assert "analysis suggests stress on <b>great</b> (longer, louder)" in page
    # A suggestion, never a label: no word is pressed and none is saved as stressed.
    assert 'aria-pressed="true"' not in page
    assert '<input type="hidden" name="p_stressed_words" value="[]">' in page


def test_the_adjudication_page_shows_them_too(
    users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    (annotation,) = assign(timed_item(), users["annotator"])  # type: ignore[arg-type]
    submitted(annotation)

    page = (
        client_for("lead").get(reverse("annotation:adjudicate", args=[annotation.item_id])).content.decode()
    )

    assert 'data-testid="word-ruler"' in page and "Speaking rate: 8.3 phones/s" in page
    assert "analysis suggests stress on <b>great</b> (longer, louder)" in page


def test_a_take_without_a_speech_check_has_no_ruler(users: dict[str, User]) -> None:
    (annotation,) = assign(LabellingItemFactory.create(), users["annotator"])
    client = Client()
    client.force_login(users["annotator"])

    page = client.get(reverse("annotation:workbench", args=[annotation.pk])).content.decode()

    assert 'data-testid="word-ruler"' not in page and 'data-testid="stress-suggestions"' not in page
