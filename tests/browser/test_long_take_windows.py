"""Real Chromium: a 5-minute take's workbench draws its waveform from the peaks and asks for the
contours and words of the part in view only, then for a narrower window as it is zoomed into; the
word ruler shows that window's words. The adjudication page does the same (issue 46)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from annotation.audio.peaks import waveform_peaks
from annotation.recording.models import Take
from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from tests.annotation.labelling.test_take_windows import long_contours, long_words
from tests.browser.test_long_take_waveform import long_wav
from tests.browser.test_workbench_keeps_work import open_workbench
from tests.support.browser import log_in, wait_for_layout
from webapp.storage import new_media_key, save_media

pytestmark = pytest.mark.browser

SECONDS = 300

WINDOW_STATE = """() => {
  const wave = document.querySelector("[data-testid=waveform]");
  const words = Array.from(document.querySelectorAll("[data-word-ruler] li[data-start]"));
  return {
    window: wave.dataset.window || "",
    requests: parseInt(wave.dataset.windowRequests || "0", 10),
    words: words.map((li) => [parseFloat(li.dataset.start), parseFloat(li.dataset.end)]),
    note: document.querySelector("[data-testid=word-note]").hidden ? "" : document.querySelector("[data-testid=word-note]").textContent,
  };
}"""


def long_take_item() -> Any:
    data, samples = long_wav(SECONDS)
    item = LabellingItemFactory.create(
        recording__audio_key=save_media(new_media_key("take", "wav"), data),
        recording__duration_seconds=float(SECONDS),
        recording__contours=long_contours(SECONDS),
        recording__qc={"speech": {"words": long_words(SECONDS), "phones_per_second": 9.5}},
    )
    assert item.recording_id is not None
    Take.objects.filter(pk=item.recording_id).update(peaks=waveform_peaks(samples, 16_000))
    return item


def test_a_long_takes_workbench_loads_contours_and_words_per_window(
    open_browser_page: Any,
    live_server: Any,
    transactional_db: None,
    users: Any,
    media_root: Any,
    screenshots: Path,
) -> None:
    item = long_take_item()
    (mine,) = assign(item, users["annotator"])
    asked: list[tuple[float, float]] = []
    with open_browser_page(viewport={"width": 1400, "height": 900}) as page:
        page.on(
            "request",
            lambda request: (
                asked.append(
                    (
                        float(parse_qs(urlparse(request.url).query)["start"][0]),
                        float(parse_qs(urlparse(request.url).query)["end"][0]),
                    )
                )
                if "/window/?" in request.url
                else None
            ),
        )
        open_workbench(page, live_server, mine)
        assert page.get_attribute("[data-testid=waveform]", "data-peaks") == "true"

        # The whole take is in view: one window of it, averaged contours, the words only counted.
        first = wait_for_layout(page, WINDOW_STATE, lambda state: state["window"] == "0.00-300.00")
        assert asked == [(0.0, 300.0)]
        assert first["words"] == [] and first["note"] == "600 words in view: zoom in to see them"
        page.screenshot(path=str(screenshots / "long-take-whole.png"))

        # Zoomed in five steps (1.6x each: about 29 s in view), a narrower window, with its words.
        page.locator("[data-testid=waveform]").focus()
        for _ in range(5):
            page.keyboard.press("+")
        zoomed = wait_for_layout(
            page,
            WINDOW_STATE,
            lambda state: state["window"] not in ("", "0.00-300.00") and bool(state["words"]),
        )
        start, end = (float(edge) for edge in zoomed["window"].split("-"))
        assert end - start < 100 and len(asked) >= 2
        assert all(seconds[1] - seconds[0] < 300 for seconds in asked[1:])
        assert all(word_end >= start and word_start <= end for word_start, word_end in zoomed["words"])
        assert len(zoomed["words"]) == len(
            [w for w in long_words(SECONDS) if w["end"] >= start and w["start"] <= end]
        )
        assert zoomed["note"] == ""
        assert page.locator("[data-word-ruler] li[data-start]").first.is_visible()
        page.screenshot(path=str(screenshots / "long-take-zoomed.png"))


def test_the_adjudication_page_draws_a_long_take_from_its_peaks_and_windows(
    open_browser_page: Any,
    live_server: Any,
    transactional_db: None,
    users: Any,
    media_root: Any,
    screenshots: Path,
) -> None:
    item = long_take_item()
    submitted(assign(item, users["annotator"])[0])
    path = f"/adjudicate/{item.pk}/"
    with open_browser_page(viewport={"width": 1400, "height": 900}) as page:
        log_in(page, live_server, "lead", start=f"/accounts/login/?next={path}")
        page.wait_for_url(f"{live_server.url}{path}")
        page.wait_for_selector("[data-testid=waveform][data-drawn-at]")

        assert page.get_attribute("[data-testid=waveform]", "data-peaks") == "true"
        state = wait_for_layout(page, WINDOW_STATE, lambda state: state["window"] == "0.00-300.00")
        assert state["note"] == "600 words in view: zoom in to see them"
        page.screenshot(path=str(screenshots / "adjudication-long-take.png"))
