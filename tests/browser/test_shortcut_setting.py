"""Real Chromium: a person's shortcut choice (WCAG 2.1.4) holds on a page's own keys: off, the
zoom key does nothing; Alt required, the bare key does nothing and Alt with it zooms."""

from __future__ import annotations

import pytest

from tests.annotation.labelling.support import LabellingItemFactory
from tests.support.browser import log_in
from webapp.models import ShortcutKeys

pytestmark = pytest.mark.browser


def test_the_zoom_key_follows_the_persons_shortcut_choice(
    browser_page, live_server, transactional_db, users
) -> None:
    page = browser_page
    take = LabellingItemFactory.create().recording
    assert take is not None
    admin = users["admin"]
    admin.shortcut_keys = ShortcutKeys.OFF
    admin.save(update_fields=["shortcut_keys"])
    path = f"/takes/{take.public_id}/"
    log_in(page, live_server, "admin", start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")
    page.wait_for_selector("#take-view[data-contours-drawn=true]")

    def zoom() -> str:
        return str(page.evaluate("() => document.getElementById('waveform').dataset.zoom || '0'"))

    page.keyboard.press("=")
    page.keyboard.press("Alt+Equal")
    page.wait_for_timeout(300)
    assert zoom() == "0"

    admin.shortcut_keys = ShortcutKeys.MODIFIER
    admin.save(update_fields=["shortcut_keys"])
    page.reload()
    page.wait_for_selector("#take-view[data-contours-drawn=true]")
    page.keyboard.press("=")
    page.wait_for_timeout(300)
    assert zoom() == "0"
    page.keyboard.press("Alt+Equal")
    page.wait_for_function("() => (document.getElementById('waveform').dataset.zoom || '0') !== '0'")
