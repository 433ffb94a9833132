"""Real Chromium: the take page draws its contours with the shared waveform script, in the studio's
one pair of pitch/energy colours, and zooms with the keys."""

from __future__ import annotations

import pytest

from tests.annotation.labelling.support import LabellingItemFactory
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def test_the_take_page_draws_contours_in_the_shared_colours(
    browser_page, live_server, transactional_db, users, screenshots
) -> None:
    page = browser_page
    take = LabellingItemFactory.create().recording
    assert take is not None
    path = f"/takes/{take.public_id}/"
    log_in(page, live_server, "admin", start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")
    page.wait_for_selector("#take-view[data-contours-drawn=true]")
    assert "Hz" in page.locator("#contour-range").inner_text()
    colours = page.evaluate(
        "() => [EchoWaveform.colours.pitch, EchoWaveform.colours.energy,"
        " getComputedStyle(document.querySelector('.line-sample.pitch')).borderTopColor]"
    )
    assert colours[:2] == ["#a84300", "#0b7360"]  # static/css/studio.css --pitch, --energy
    assert colours[2] == "rgb(168, 67, 0)"  # the legend's line sample shows the same pitch colour
    # The contour canvas lies exactly over the waveform box.
    waveform, canvas = page.locator("#waveform").bounding_box(), page.locator("#contours").bounding_box()
    assert abs(waveform["y"] - canvas["y"]) < 2 and abs(waveform["x"] - canvas["x"]) < 2
    page.keyboard.press("+")
    page.wait_for_function("() => document.getElementById('waveform').dataset.zoom !== '0'")
    page.screenshot(path=str(screenshots / "take-page.png"), full_page=True)
