"""Real Chromium at 1,400 px: the workbench's waveform spans the content column with a time ruler
and its zoom level in words; segment labels never cover each other, and overlapping segments are
flagged while they are edited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.annotation.labelling.support import LabellingItemFactory, assign
from tests.browser.test_workbench_keeps_work import open_workbench
from tests.support.browser import wait_for_layout
from webapp.lib import vocabulary

pytestmark = pytest.mark.browser


LABEL_BOXES = """() => {
  const host = document.querySelector("[data-testid=waveform]").firstElementChild;
  return Array.from(host.shadowRoot.querySelectorAll(".region-label")).map((label) => {
    const box = label.getBoundingClientRect();
    return [box.left, box.top, box.right, box.bottom];
  });
}"""


def _covers(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _any_covers(boxes: list[list[float]]) -> bool:
    return any(_covers(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_the_workbench_waveform_spans_the_column_with_ruler_zoom_and_clear_labels(
    open_browser_page: Any, live_server: Any, transactional_db: None, users: Any, screenshots: Path
) -> None:
    (mine,) = assign(LabellingItemFactory.create(scenario=vocabulary.EMOTION_SHIFT), users["annotator"])
    with open_browser_page(viewport={"width": 1400, "height": 900}) as page:
        open_workbench(page, live_server, mine)
        waveform = page.locator("[data-testid=waveform]").bounding_box()
        column = page.locator("[data-testid=waveform-card]").bounding_box()
        form = page.locator("#workbench-form").bounding_box()
        assert waveform["width"] >= column["width"] - 60  # the card's padding only
        assert waveform["width"] > form["width"] + 300 and waveform["width"] > 1000
        assert waveform["height"] >= 200
        assert page.locator(".waveform-ruler").bounding_box()["width"] == pytest.approx(
            waveform["width"], abs=3
        )
        assert page.inner_text("[data-testid=zoom-level]") == "whole take · 1.50 s"

        # Three short segments side by side, narrower than their labels: the labels take rows.
        rows = page.locator("[data-testid=segments] tbody tr")
        for index, (end, emotion) in enumerate([(0.04, "happy"), (0.08, "surprise"), (0.12, "")]):
            page.locator("[data-testid=workbench-title]").click()
            page.keyboard.press("g")  # from the last segment's end
            rows.nth(index).locator("[data-key=end]").fill(f"{end}")
            rows.nth(index).locator("[data-key=emotion]").select_option(emotion)
        page.locator("[data-testid=workbench-title]").click()
        # The labels are laid out in rows a debounce after the regions are drawn.
        boxes = wait_for_layout(page, LABEL_BOXES, lambda found: len(found) == 3 and not _any_covers(found))
        assert len(boxes) == 3
        assert not any(_covers(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :]), boxes
        assert int(page.get_attribute("[data-waveform]", "data-label-rows") or 0) >= 2
        assert page.locator("[data-testid=segment-overlaps]").is_hidden()

        # An overlap is flagged as it is typed, in the server's words.
        rows.nth(1).locator("[data-key=start]").fill("0.02")
        note = page.locator("[data-testid=segment-overlaps]")
        assert note.is_visible() and note.inner_text() == "Segment 2 overlaps the one before it."
        assert "overlap" in (rows.nth(1).get_attribute("class") or "")
        page.screenshot(path=str(screenshots / "workbench-1400.png"), full_page=False)
        page.screenshot(path=str(screenshots / "workbench-1400-full.png"), full_page=True)

        page.locator("[data-testid=workbench-title]").click()
        page.keyboard.press("+")
        page.keyboard.press("+")
        page.wait_for_function(
            "() => document.querySelector('[data-testid=zoom-level]').textContent.startsWith('zoom ×2.6 · ')"
        )
        boxes = wait_for_layout(page, LABEL_BOXES, lambda found: len(found) == 3 and not _any_covers(found))
        assert not any(_covers(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :]), boxes
        page.screenshot(path=str(screenshots / "workbench-1400-zoomed.png"), full_page=False)
