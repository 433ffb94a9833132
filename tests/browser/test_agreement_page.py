"""Real Chromium at 1,400 px: the agreement page's wide per-annotator table is never cut off at the
right (it fits, or scrolls inside a region the keyboard reaches), and a figure that is undefined
for a turn of one item reads "—" like every other undefined figure, not a red 0.000."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from annotation.gold.adjudication import adjudicate_item
from tests.annotation.labelling.dialogue.support import (
    cross_turn,
    recorded_dialogue,
    submit_turn,
    turn_perception,
    turn_tom,
)
from tests.annotation.labelling.support import assign
from tests.support.browser import log_in
from webapp.roles import Role

pytestmark = pytest.mark.browser


def _right(page: Any, selector: str) -> float:
    return page.locator(selector).evaluate("node => node.getBoundingClientRect().right")


def test_the_per_annotator_table_is_reachable_to_its_last_column_and_undefined_turns_read_a_dash(
    open_browser_page: Callable[..., AbstractContextManager[Any]],
    live_server,
    users,
    make_user,
    screenshots: Path,
):
    annotators = [make_user(Role.ANNOTATOR, name) for name in ("anastasia.w", "benedikt.k", "cleopatra.m")]
    _, items = recorded_dialogue(2)  # one dialogue: each turn number has a single item
    for item in items:
        for annotation, change in zip(assign(item, *annotators), ("eased", "eased", "shifted"), strict=True):
            submit_turn(annotation, cross_turn=cross_turn(emotion_change=change) if item.turn == 2 else {})
    # Gold for turn 1 that differs from everyone on the emotion: the per-field figures are numbers.
    adjudicate_item(
        items[0].pk,
        lead=users["lead"],
        perception=turn_perception(emotion="sad", emotion_variant=""),
        tom=turn_tom(),
        expected_gold_version=0,
    )

    # Keyboard scrolling without animation: each arrow press has moved the region when it returns.
    with open_browser_page("--disable-smooth-scrolling", viewport={"width": 1400, "height": 900}) as page:
        log_in(page, live_server, "lead", start="/accounts/login/?next=/agreement/")
        page.wait_for_selector("[data-testid=annotator-agreement]")
        page.screenshot(path=str(screenshots / "agreement-1400.png"), full_page=True)
        page.locator("section:has([data-testid=annotator-agreement])").screenshot(
            path=str(screenshots / "agreement-1400-annotators.png")
        )
        page.locator("section:has([data-testid=turn-agreement])").screenshot(
            path=str(screenshots / "agreement-1400-turns.png")
        )

        page_width = page.evaluate("document.documentElement.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= page_width  # the page itself fits
        for table in ("annotator-agreement", "annotator-field-agreement"):
            region = page.locator(f"[role=region]:has([data-testid={table}])")
            assert region.get_attribute("tabindex") == "0" and region.get_attribute("aria-label")
            # At 1,400 px both tables fit their card: nothing to scroll, nothing cut off.
            assert region.evaluate("node => node.scrollWidth <= node.clientWidth")
            assert _right(page, f"[data-testid={table}]") <= _right(
                page, f"[role=region]:has([data-testid={table}])"
            )
            assert _right(page, f"[role=region]:has([data-testid={table}])") <= page_width
        fields = page.inner_text("[data-testid=annotator-field-agreement]")
        assert "Not-recommended strategies" in fields and "0.00" in fields and "1.00" in fields

        # Narrower than the table, the region scrolls, and the keyboard brings its last column into view.
        # (narrow screens get slimmer margins, static/css/studio.css: 400 px is narrower than the table)
        page.set_viewport_size({"width": 400, "height": 900})
        region = page.locator("[role=region]:has([data-testid=annotator-field-agreement])")
        assert region.evaluate("node => node.scrollWidth > node.clientWidth")
        region.focus()
        for _ in range(60):
            if region.evaluate("node => node.scrollLeft + node.clientWidth >= node.scrollWidth - 1"):
                break
            page.keyboard.press("ArrowRight")
        last = "[data-testid=annotator-field-agreement] thead th:last-child"
        assert (
            _right(page, last)
            <= _right(page, "[role=region]:has([data-testid=annotator-field-agreement])") + 1
        )
        page.screenshot(path=str(screenshots / "agreement-400-scrolled.png"), full_page=True)
        page.set_viewport_size({"width": 1400, "height": 900})

        # Per turn: a single item is no sample, so every alpha there is undefined: a dash, never red.
        cells = page.locator("[data-testid=turn-agreement] td[data-field]")
        assert cells.count() > 0
        for index in range(cells.count()):
            assert cells.nth(index).inner_text() == "—"
        assert page.locator("[data-testid=turn-agreement] td.low").count() == 0
