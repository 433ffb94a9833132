"""Real Chromium: a 10-minute take is drawn from the peaks its analysis made, before its audio has
arrived; the audio streams in small range requests (issue 46)."""

from __future__ import annotations

import io
import re
import wave
from typing import Any

import numpy as np
import pytest

from annotation.audio.peaks import waveform_peaks
from annotation.recording.models import Take
from tests.annotation.labelling.support import LabellingItemFactory
from tests.support.browser import log_in
from webapp.storage import OPEN_RANGE_LIMIT, new_media_key, save_media

pytestmark = pytest.mark.browser

MINUTES = 10


def long_wav(seconds: int, sample_rate: int = 16_000) -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(46)
    samples = (rng.standard_normal(seconds * sample_rate) * 3000).clip(-32768, 32767).astype(np.int16)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(sample_rate)
        writer.writeframes(samples.tobytes())
    return buffer.getvalue(), samples


def test_a_long_take_is_drawn_before_its_audio_arrives(
    browser_page: Any, live_server: Any, transactional_db: None, users: Any, media_root: Any
) -> None:
    page = browser_page
    data, samples = long_wav(MINUTES * 60)
    key = save_media(new_media_key("take", "wav"), data)
    take = LabellingItemFactory.create(
        recording__audio_key=key, recording__duration_seconds=MINUTES * 60.0
    ).recording
    assert take is not None
    Take.objects.filter(pk=take.pk).update(peaks=waveform_peaks(samples, 16_000))  # as the analysis leaves it
    audio: list[tuple[int, str]] = []
    page.on(
        "response",
        lambda response: (
            audio.append((response.status, response.headers.get("content-range", "")))
            if "/media/a/" in response.url
            else None
        ),
    )
    path = f"/takes/{take.public_id}/"
    log_in(page, live_server, "admin", start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")

    page.wait_for_selector("#waveform[data-drawn-at]")
    fetched_before_draw = list(audio)

    assert page.locator("#waveform").get_attribute("data-peaks") == "true"
    page.wait_for_function(
        "() => /600\\.0 s/.test(document.getElementById('waveform').getAttribute('aria-label'))"
    )
    # Before the waveform was drawn, the audio (19.2 MB) was at most asked for in one small range.
    spans = [
        re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", content_range) for _, content_range in fetched_before_draw
    ]
    assert all(status == 206 for status, _ in fetched_before_draw)
    assert all(span and int(span[2]) - int(span[1]) + 1 <= OPEN_RANGE_LIMIT for span in spans)
    assert sum(int(span[2]) - int(span[1]) + 1 for span in spans if span) < len(data) / 20
    # And afterwards no response ever carried the whole file.
    assert all(status == 206 for status, _ in audio)
