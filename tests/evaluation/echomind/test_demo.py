"""The EchoMind demo: eSpeak NG voices every delivery, and the leaderboard has two systems' numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.recording.models import Item
from evaluation.echomind import reports
from evaluation.echomind.demo import seed_echomind_demo
from evaluation.echomind.models import Delivery
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_demo_is_voiced_recorded_answered_and_seeds_twice_without_duplicates(media_root: Path) -> None:
    UserFactory.create(username="admin")
    assert seed_echomind_demo() == 4
    assert seed_echomind_demo() == 4
    deliveries = Delivery.objects.select_related("item__recording")
    assert deliveries.count() == 11  # 3 + 3 + 2 (speaker: no neutral) + 3
    durations = [d.item.recording.duration_seconds if d.item.recording else 0.0 for d in deliveries]
    assert all(d.item.state == Item.State.RECORDED for d in deliveries) and min(durations) > 0.5
    assert all(d.item.recording and d.item.recording.contours for d in deliveries), "measured like demo takes"
    rows = {row.system: row for row in reports.board()}
    listener, text_only = rows["EchoMind demo listener"], rows["EchoMind demo text-only"]
    # Listener: 5 of 6 understanding (age group wrong), 3 of 3 reasoning, perfect transcripts.
    assert (listener.understanding.correct, listener.reasoning.correct, listener.wer) == (5, 3, 0.0)
    # Text-only: only the neutral emotion right, one unparseable; 2 words dropped per transcript.
    assert (text_only.understanding.correct, text_only.understanding.unparsed) == (1, 1)
    assert text_only.reasoning.correct == 1
    assert text_only.wer == pytest.approx(8 / 25)  # 7 + 6 + 5 + 7 reference words
