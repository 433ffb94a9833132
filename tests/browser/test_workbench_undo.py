"""Real Chromium: undo steps back one edit at a time however fast the keys come, redo brings each
back, and a refused submit keeps the annotator on the workbench with its messages and its history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from annotation.labelling.models import Annotation
from tests.annotation.labelling.support import LabellingItemFactory, assign
from tests.browser.test_workbench_keeps_work import open_workbench, saved_version, wait_for_save_after
from tests.conftest import wait_until
from webapp.lib import vocabulary

pytestmark = pytest.mark.browser

# The labels as the page holds them (what undo restores), read the way workbench_keep.js reads them.
LABELS = """() => JSON.stringify(Array.from(new FormData(document.getElementById("workbench-form")))
  .filter(([name]) => name !== "csrfmiddlewaretoken" && name !== "version"))"""

# Ten edits, each one key, pressed with no pause between them (Escape only leaves the segment's
# emotion box that "g" focuses; it changes nothing).
TEN_EDITS = [
    "Digit3",  # emotion
    "Shift+Digit1",  # polarity
    "Alt+Digit2",  # intensity
    "g",  # add a segment
    "Escape",
    ".",  # move it
    ">",  # its start later
    "Shift+ArrowRight",  # its end later
    "Digit5",  # another emotion
    "Shift+Digit2",  # another polarity
    "Delete",  # remove the segment
]


def test_ten_quick_keyboard_edits_undo_one_by_one_and_redo_back(
    browser_page: Any, live_server: Any, transactional_db: None, users: Any
) -> None:
    page = browser_page
    (mine,) = assign(LabellingItemFactory.create(scenario=vocabulary.EMOTION_SHIFT), users["annotator"])
    open_workbench(page, live_server, mine)
    page.locator("[data-testid=workbench-title]").click()
    states = [page.evaluate(LABELS)]
    for key in TEN_EDITS:
        page.keyboard.press(key)
        if key != "Escape":
            states.append(page.evaluate(LABELS))
    assert len(set(states)) == 11, "every key changed the labels"
    assert page.get_attribute("#workbench-form", "data-undo-steps") == "10"

    for expected in reversed(states[:-1]):
        page.keyboard.press("Control+z")
        assert page.evaluate(LABELS) == expected
    assert page.locator("[data-testid=undo]").is_disabled()
    for expected in states[1:]:
        page.keyboard.press("Control+Shift+z")
        assert page.evaluate(LABELS) == expected
    assert page.locator("[data-testid=redo]").is_disabled()
    assert page.get_attribute("#workbench-form", "data-undo-steps") == "10"


def test_a_refused_submit_keeps_the_page_its_messages_and_its_history(
    browser_page: Any, live_server: Any, transactional_db: None, users: Any, screenshots: Path
) -> None:
    page = browser_page
    (mine,) = assign(LabellingItemFactory.create(), users["annotator"])
    open_workbench(page, live_server, mine)
    version = saved_version(page)
    workbench_url = page.url
    page.locator("[data-testid=workbench-title]").click()
    page.keyboard.press("Digit3")
    page.keyboard.press("Shift+Digit1")
    page.keyboard.press("Control+Enter")  # submit, incomplete

    page.wait_for_selector("[data-testid=problems]")
    problems = page.locator("[data-testid=problems]").inner_text()
    assert "Intensity: Choose a value." in problems and "Polarity" not in problems
    assert page.url == workbench_url
    assert page.locator("fieldset[data-field=intensity]").get_attribute("class") == "group has-problem"
    page.screenshot(path=str(screenshots / "refused-submit.png"), full_page=True)

    # The history survived: undo takes back the polarity, then the emotion.
    page.keyboard.press("Control+z")
    assert not page.locator("input[name=p_polarity]:checked").count()
    assert page.locator("input[name=p_emotion][value=angry]").is_checked()
    page.keyboard.press("Control+z")
    assert not page.locator("input[name=p_emotion]:checked").count()
    page.keyboard.press("Control+Shift+z")

    # The refusal kept a draft under a new version, and the page saves on from it (no stale refusal).
    wait_for_save_after(page, version + 1)
    assert page.locator("[data-testid=save-status]").get_attribute("data-stale") is None

    def saved_after_undo(annotation: Annotation = mine) -> bool:
        annotation.refresh_from_db()
        return annotation.perception.get("emotion") == "angry" and not annotation.perception.get("polarity")

    wait_until(saved_after_undo, timeout=10, message="the undone state was never saved")
