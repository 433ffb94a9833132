"""Real Chromium: a person's shortcut choice (WCAG 2.1.4) holds on a page's own keys: off, the
zoom key does nothing; Alt required, the bare key does nothing and Alt with it does what the bare
key does with single keys (zoom; on the workbench emotion, polarity and intensity); a focused
waveform keeps its own keys whatever the choice."""

from __future__ import annotations

import pytest

from tests.annotation.labelling.support import LabellingItemFactory, assign
from tests.support.browser import log_in, press_and_settle
from webapp.models import ShortcutKeys

pytestmark = pytest.mark.browser


def open_a_take_page(page, live_server, admin, choice: ShortcutKeys) -> None:
    """Log the admin in with this shortcut choice and open a take's page, its contours drawn."""
    take = LabellingItemFactory.create().recording
    assert take is not None
    admin.shortcut_keys = choice
    admin.save(update_fields=["shortcut_keys"])
    path = f"/takes/{take.public_id}/"
    log_in(page, live_server, admin.username, start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")
    page.wait_for_selector("#take-view[data-contours-drawn=true]")


def test_the_zoom_key_follows_the_persons_shortcut_choice(
    browser_page, live_server, transactional_db, users
) -> None:
    page = browser_page
    admin = users["admin"]
    open_a_take_page(page, live_server, admin, ShortcutKeys.OFF)

    def zoom() -> str:
        return str(page.evaluate("() => document.getElementById('waveform').dataset.zoom || '0'"))

    press_and_settle(page, "=", "Alt+Equal")
    assert zoom() == "0"

    admin.shortcut_keys = ShortcutKeys.MODIFIER
    admin.save(update_fields=["shortcut_keys"])
    page.reload()
    page.wait_for_selector("#take-view[data-contours-drawn=true]")
    press_and_settle(page, "=")
    assert zoom() == "0"
    page.keyboard.press("Alt+Equal")
    page.wait_for_function("() => (document.getElementById('waveform').dataset.zoom || '0') !== '0'")


def test_alt_keys_on_the_workbench_do_what_the_single_keys_do(
    browser_page, live_server, transactional_db, users
) -> None:
    page = browser_page
    annotator = users["annotator"]
    (annotation,) = assign(LabellingItemFactory.create(), annotator)
    path = f"/annotate/{annotation.pk}/"
    log_in(page, live_server, "annotator", start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")

    def chosen() -> dict[str, str]:
        return dict(
            page.evaluate(
                "() => ['p_emotion', 'p_polarity', 'p_intensity'].map((name) => "
                "[name, (document.querySelector(`input[name=${name}]:checked`) || {}).value || ''])"
            )
        )

    def press_on_a_fresh_page(*keys: str) -> dict[str, str]:
        page.reload()
        page.wait_for_selector("[data-waveform][data-ready=true]")
        page.evaluate(
            "() => document.querySelectorAll('input[type=radio]:checked').forEach((r) => { r.checked = false; })"
        )
        page.get_by_test_id("workbench-title").click()
        for key in keys:
            page.keyboard.press(key)
        return chosen()

    # 3 angry, Shift+2 negative, i twice then Shift+I: one step up, one more, one back (low).
    single = press_on_a_fresh_page("Digit3", "Shift+Digit2", "KeyI", "KeyI", "Shift+KeyI")
    assert single == {"p_emotion": "angry", "p_polarity": "negative", "p_intensity": "low"}

    annotator.shortcut_keys = ShortcutKeys.MODIFIER
    annotator.save(update_fields=["shortcut_keys"])
    nothing = press_on_a_fresh_page("Digit3", "Shift+Digit2", "KeyI", "Space")
    assert nothing == {"p_emotion": "", "p_polarity": "", "p_intensity": ""}
    assert page.get_by_test_id("play").get_attribute("aria-pressed") == "false"
    with_alt = press_on_a_fresh_page(
        "Alt+Digit3", "Alt+Shift+Digit2", "Alt+KeyI", "Alt+KeyI", "Alt+Shift+KeyI"
    )
    assert with_alt == single
    # The page says the keys as this setting makes them: Alt+1-3 is an emotion now.
    intensity = page.locator("fieldset[data-field=intensity] legend .key-hint")
    assert intensity.inner_text() == "Alt+I, Alt+Shift+I"
    assert "Alt+Shift+I" in page.get_by_test_id("shortcut-mode").inner_text()


def test_a_focused_waveform_keeps_its_keys_with_shortcuts_off(
    browser_page, live_server, transactional_db, users
) -> None:
    page = browser_page
    open_a_take_page(page, live_server, users["admin"], ShortcutKeys.OFF)

    # Keys that act only while their component has focus are not shortcuts (WCAG 2.1.4).
    page.get_by_role("application", name="Waveform of this take, 1.5 s").focus()
    page.keyboard.press("=")
    page.wait_for_function("() => (document.getElementById('waveform').dataset.zoom || '0') !== '0'")
    page.keyboard.press("Space")
    page.wait_for_selector("#play-toggle[aria-pressed=true]")
