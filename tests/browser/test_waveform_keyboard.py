"""Real Chromium: a waveform is one named, focusable control with its own keys (Space, arrows, Home,
End, + and −) and a visible focus ring; Play / pause says whether it plays; a segment's handles on
the workbench are named sliders the arrow keys move (WCAG 2.1.1, 2.4.7, 4.1.2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.annotation.labelling.support import LabellingItemFactory, assign
from tests.conftest import wait_until
from tests.support.browser import log_in

pytestmark = pytest.mark.browser

SEGMENTS = [
    {"start": 0.0, "end": 0.6, "emotion": "happy", "words": "Oh great"},
    {"start": 0.6, "end": 1.5, "emotion": "sad", "words": "another Monday"},
]


def open_workbench(page: Any, live_server: Any, users: Any, **item: Any) -> Any:
    """Open the annotator's workbench on a fresh item (the take lasts 1.5 s) once its waveform is drawn."""
    (annotation,) = assign(LabellingItemFactory.create(**item), users["annotator"])
    if item.get("scenario") == "emotion-shift":
        annotation.perception = {**annotation.perception, "emotion_segments": SEGMENTS}
        annotation.save(update_fields=["perception"])
    path = f"/annotate/{annotation.pk}/"
    log_in(page, live_server, "annotator", start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")
    page.wait_for_selector("[data-waveform][data-ready=true]")
    return annotation


def test_the_focused_waveform_plays_seeks_and_zooms_from_its_own_keys(
    browser_page: Any, live_server: Any, transactional_db: None, users: Any, screenshots: Path
) -> None:
    page = browser_page
    open_workbench(page, live_server, users)
    waveform = page.get_by_role("application", name="Waveform of the recording, 1.5 s")
    assert waveform.get_attribute("aria-roledescription") == "waveform"
    description = waveform.get_attribute("aria-describedby")
    assert "Space plays or pauses" in page.locator(f"#{description}").inner_text()

    # Tab reaches it from the top of the page, and it shows where the keys go.
    focused = "el => document.activeElement === el"
    for _ in range(30):
        page.keyboard.press("Tab")
        if waveform.evaluate(focused):
            break
    assert waveform.evaluate("el => document.activeElement === el && el.matches(':focus-visible')")
    assert waveform.evaluate("el => getComputedStyle(el).outlineStyle") == "solid"
    page.screenshot(path=str(screenshots / "waveform-focused.png"))

    page.keyboard.press("End")
    page.wait_for_function("() => document.querySelector('[data-testid=playhead]').textContent === '1.50 s'")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('[data-testid=playhead]').textContent === '1.00 s'")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => document.querySelector('[data-testid=playhead]').textContent === '0.00 s'")
    page.keyboard.press("+")
    page.wait_for_function("() => document.querySelector('[data-testid=waveform]').dataset.zoom !== '0'")

    play = page.get_by_role("button", name="Play / pause")
    assert play.get_attribute("aria-pressed") == "false"
    page.keyboard.press("Space")  # once: the page's own Space must not toggle it back
    page.wait_for_selector("[data-testid=play][aria-pressed=true]")
    # Playing is the media element's state, not the playhead's progress: after this many seeks,
    # headless Chromium sometimes holds a blob WAV at readyState 1 for a minute (seen in 1 of 4
    # runs on 2 cores), which is the browser's buffering, not these keys.
    media = "el => { const audio = el.querySelector('div').shadowRoot.querySelector('audio'); return !audio.paused || audio.ended; }"
    assert waveform.evaluate(media)  # playing, or already played to the end of the 1.5 s take
    page.keyboard.press("Space")
    page.wait_for_selector("[data-testid=play][aria-pressed=false]")


def test_segment_handles_are_named_sliders_the_arrow_keys_move(
    browser_page: Any, live_server: Any, transactional_db: None, users: Any, screenshots: Path
) -> None:
    page = browser_page
    annotation = open_workbench(page, live_server, users, scenario="emotion-shift")
    assert page.get_by_role("group", name="Segment 1, happy, 0.00 s to 0.60 s").count() == 1
    start = page.get_by_role("slider", name="Start of segment 2")
    assert start.get_attribute("aria-valuenow") == "0.60"
    assert start.get_attribute("aria-valuetext") == "0.60 s"
    assert (start.get_attribute("aria-valuemin"), start.get_attribute("aria-valuemax")) == ("0.00", "1.45")
    end = page.get_by_role("slider", name="End of segment 2")
    assert end.get_attribute("aria-valuenow") == "1.50"

    start.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "() => JSON.parse(document.querySelector('[name=p_emotion_segments]').value)[1].start === 0.65"
    )
    # Drawn again, the handle keeps the focus and says its new value.
    moved = page.get_by_role("slider", name="Start of segment 2")
    page.wait_for_function("el => el.getRootNode().activeElement === el", arg=moved.element_handle())
    assert moved.get_attribute("aria-valuenow") == "0.65"
    page.keyboard.press("PageUp")
    page.wait_for_function(
        "() => JSON.parse(document.querySelector('[name=p_emotion_segments]').value)[1].start === 1.15"
    )
    assert (
        page.get_by_role("slider", name="Start of segment 2").evaluate(
            "el => getComputedStyle(el).outlineStyle"
        )
        == "solid"
    )
    page.screenshot(path=str(screenshots / "handle-focused.png"))
    assert page.get_by_label("Segment 2 start").input_value() == "1.15"
    assert page.get_by_test_id("playhead").inner_text() == "0.00 s"  # the handle's arrows did not seek

    def saved_start() -> float:
        annotation.refresh_from_db()
        return float(annotation.perception["emotion_segments"][1]["start"])

    wait_until(lambda: saved_start() == 1.15, timeout=10, message="the moved start was never autosaved")
    assert page.get_by_role("group", name="Segment 2, sad, 1.15 s to 1.50 s").count() == 1
    assert json.loads(page.locator("[name=p_emotion_segments]").input_value())[0]["end"] == 0.6  # untouched


# Every field but the CSRF token and the version, as the form would send it.
LABELS = """() => {
  const out = {};
  new FormData(document.querySelector('form[data-workbench]')).forEach((value, name) => {
    if (name !== 'csrfmiddlewaretoken' && name !== 'version') out[name] = (out[name] ? out[name] + '|' : '') + value;
  });
  return out;
}"""
FOCUS_ON_PAGE = "() => document.activeElement === document.body"


def test_every_documented_key_changes_only_the_label_it_is_for_whatever_has_focus(
    browser_page: Any, live_server: Any, transactional_db: None, users: Any
) -> None:
    """Keyboard only, after 1-7, g, s and a click on a radio: arrows, letters and brackets never
    change a focused control; Space ticks a focused checkbox; Esc leaves whatever has focus."""
    page = browser_page
    (annotation,) = assign(LabellingItemFactory.create(scenario="emotion-shift"), users["annotator"])
    annotation.perception = {**annotation.perception, "emotion_segments": SEGMENTS[:1]}
    annotation.save(update_fields=["perception"])
    path = f"/annotate/{annotation.pk}/"
    log_in(page, live_server, "annotator", start=f"/accounts/login/?next={path}")
    page.wait_for_selector("[data-waveform][data-ready=true]")
    # The hints are written from the table the keys run.
    hints = page.get_by_test_id("shortcut-list").inner_text()
    assert "Back / forward 1 s" in hints and "Snap the selected segment" in hints

    def press(key: str, changes: set[str], *, may: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        before = page.evaluate(LABELS)
        page.keyboard.press(key)
        # Two animation frames: whatever the key's handler scheduled for the next frame has run.
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        after = page.evaluate(LABELS)
        changed = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
        assert changes <= changed <= changes | may, (key, changed)

    playhead = "t => document.querySelector('[data-testid=playhead]').textContent === t"
    segments = {"p_emotion_segments"}
    press("3", {"p_emotion"})
    assert page.evaluate(FOCUS_ON_PAGE)  # not the emotion radio group
    press("ArrowRight", set())
    page.wait_for_function(playhead, arg="1.00 s")
    press("ArrowLeft", set())
    press("ArrowRight", set())
    press("Shift+Digit2", {"p_polarity"})
    press("Alt+Digit2", {"p_intensity"})
    press("i", {"p_intensity"})
    press("g", segments)  # a segment from the last end (0.6 s) to the playhead (1.0 s)
    assert page.evaluate(FOCUS_ON_PAGE)  # not the new segment's emotion list
    for key in ("ArrowRight", "ArrowLeft", "s", "S", "s", "[", "]", "+", "-", "Space", "Space"):
        press(key, set())
    for key in (".", ",", ">", "<", "Shift+ArrowRight", "Shift+ArrowLeft"):
        press(key, segments)
    press("w", set(), may=segments)

    page.get_by_role("radio", name="sad").first.click()  # the one click: the mouse chose sad
    for key in ("ArrowRight", "ArrowLeft", "s", "[", "]", "Space", "i", "Shift+ArrowLeft"):
        press(key, set(), may=segments if key.startswith("Shift") else set())
    assert page.evaluate(LABELS)["p_emotion"] == "sad"

    press("l", set())  # the segment's emotion list, focused on purpose
    assert page.evaluate("() => document.activeElement.matches('select')")
    press("Escape", set())
    assert page.evaluate(FOCUS_ON_PAGE)
    press("ArrowRight", set())
    press("Delete", segments)
    press("Control+z", segments)
    press("Control+Shift+z", segments)

    conflict = page.locator("input[name=p_modality_conflict]")
    conflict.focus()
    press("Space", {"p_modality_conflict"})
    assert conflict.is_checked()
    press("Escape", set())
    assert page.evaluate(FOCUS_ON_PAGE)
    press("Control+s", set())
