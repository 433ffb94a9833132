"""The workbench shows the take's aligned words (the speech check's forced alignment) under the waveform."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from tests.annotation.labelling.support import LabellingItemFactory, assign
from webapp.models import User

WORDS = [
    {"text": "oh", "start": 0.05, "end": 0.3, "relative_score": 1.0, "phones": 2},
    {"text": "great", "start": 0.3, "end": 0.71, "relative_score": 1.1, "phones": 4},
]


def test_the_word_ruler_lists_the_aligned_words_with_their_starts(users: dict[str, User]) -> None:
    item = LabellingItemFactory.create(recording__qc={"duration_seconds": 1.5, "speech": {"words": WORDS}})
    (annotation,) = assign(item, users["annotator"])
    client = Client()
    client.force_login(users["annotator"])

    page = client.get(reverse("annotation:workbench", args=[annotation.pk])).content.decode()

    assert 'data-testid="word-ruler"' in page
    assert '<li data-start="0.3" data-end="0.71">great <small class="muted">0.30 s</small></li>' in page


def test_a_take_without_a_speech_check_has_no_ruler(users: dict[str, User]) -> None:
    (annotation,) = assign(LabellingItemFactory.create(), users["annotator"])
    client = Client()
    client.force_login(users["annotator"])

    assert (
        'data-testid="word-ruler"'
        not in client.get(reverse("annotation:workbench", args=[annotation.pk])).content.decode()
    )
