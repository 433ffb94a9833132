"""Real Chromium: the workbench never loses work (incomplete segments, refused saves, undo) and its
waveform zooms; the annotator sees where they stand ("2 of 3") and the counts on their queue tabs."""

from __future__ import annotations

import re

import pytest

from annotation.labelling.models import Annotation
from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from tests.conftest import wait_until
from tests.support.browser import log_in
from webapp.lib import vocabulary

pytestmark = pytest.mark.browser

STATUS = "[data-testid=save-status]"


def open_workbench(page, live_server, annotation: Annotation) -> None:
    path = f"/annotate/{annotation.pk}/"
    log_in(page, live_server, annotation.annotator.username, start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")
    page.wait_for_selector("[data-waveform][data-ready=true]")


def saved_version(page) -> int:
    page.wait_for_function(f"document.querySelector('{STATUS}').textContent.includes('Draft saved')")
    match = re.search(r"version (\d+)", page.locator(STATUS).inner_text())
    assert match is not None
    return int(match.group(1))


def wait_for_save_after(page, version: int) -> int:
    page.wait_for_function(
        "v => { const m = /Draft saved.*version (\\d+)/.exec("
        f"document.querySelector('{STATUS}').textContent); return m && Number(m[1]) > v; }}",
        arg=version,
    )
    return saved_version(page)


def segments_of(annotation: Annotation) -> list[dict]:
    annotation.refresh_from_db()
    return annotation.perception.get("emotion_segments", [])


def test_segments_without_an_emotion_survive_autosave_and_reload(
    browser_page, live_server, transactional_db, users, screenshots
) -> None:
    page = browser_page
    (mine,) = assign(LabellingItemFactory.create(scenario=vocabulary.EMOTION_SHIFT), users["annotator"])
    open_workbench(page, live_server, mine)
    version = saved_version(page)

    # Two segments by keyboard, neither given an emotion yet: the draft keeps both and says so.
    page.locator("[data-testid=workbench-title]").click()
    page.keyboard.press("g")
    page.locator("[data-testid=workbench-title]").click()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("g")
    page.fill("[aria-label='Segment 2 words']", "half-typ")
    wait_for_save_after(page, version)
    wait_until(lambda: len(segments_of(mine)) == 2, timeout=10, message="the segments were never saved")
    page.wait_for_selector("[data-testid=open-problems]")
    note = page.locator("[data-testid=open-problems]").inner_text()
    assert "Emotion segments: Segment 1 needs an emotion." in note
    assert "perception." not in page.locator("#save-status").inner_text()
    wait_until(lambda: segments_of(mine)[1]["words"] == "half-typ", timeout=10, message="words lost")
    assert [segment["emotion"] for segment in segments_of(mine)] == ["", ""]
    page.screenshot(path=str(screenshots / "incomplete-segments.png"), full_page=True)

    page.reload()
    page.wait_for_selector("[data-waveform][data-ready=true]")
    assert page.locator("[data-testid=segments] tbody tr").count() == 2
    assert page.locator("[aria-label='Segment 2 words']").input_value() == "half-typ"
    assert "Segment 1 needs an emotion." in page.locator("[data-testid=open-problems]").inner_text()

    # Submitting still asks for everything, in people's words.
    page.click("[data-testid=submit]")
    page.wait_for_selector("[data-testid=problems]")
    problems = page.locator("[data-testid=problems]").inner_text()
    assert "Emotion segments: Segment 1 needs an emotion." in problems
    assert "Polarity: Choose a value." in problems
    assert "perception." not in problems and "tom." not in problems
    assert len(segments_of(mine)) == 2


def test_work_the_server_refused_is_offered_back_after_a_reload(
    browser_page, live_server, transactional_db, users, screenshots
) -> None:
    first = browser_page
    (mine,) = assign(LabellingItemFactory.create(), users["annotator"])
    open_workbench(first, live_server, mine)
    second = first.context.new_page()
    second.goto(f"{live_server.url}/annotate/{mine.pk}/")
    version = saved_version(second)

    first.fill("textarea[name=p_situation]", "typed in the first tab")
    wait_for_save_after(first, version)
    second.fill("textarea[name=p_situation]", "typed in the second tab, refused by the server")
    second.wait_for_selector("[data-testid=save-status][data-stale=true]")
    second.wait_for_selector("[data-testid=kept-note]")
    mine.refresh_from_db()
    assert mine.perception["situation"] == "typed in the first tab"

    second.reload()
    second.wait_for_selector("[data-testid=restore-banner]:visible")
    assert second.locator("textarea[name=p_situation]").input_value() == "typed in the first tab"
    second.screenshot(path=str(screenshots / "restore-banner.png"), full_page=True)
    second.click("[data-testid=restore-kept]")
    assert (
        second.locator("textarea[name=p_situation]").input_value()
        == "typed in the second tab, refused by the server"
    )

    def restored_and_saved() -> bool:
        mine.refresh_from_db()
        return mine.perception["situation"] == "typed in the second tab, refused by the server"

    wait_until(restored_and_saved, timeout=10, message="the restored work was never saved")
    # Saved: nothing is left in the browser to offer again.
    wait_until(
        lambda: (
            second.evaluate(
                "Object.keys(localStorage).filter(k => k.startsWith('echostudio.workbench')).length"
            )
            == 0
        ),
        timeout=10,
        message="the browser's copy was not dropped after the save",
    )
    second.reload()
    second.wait_for_selector("[data-waveform][data-ready=true]")
    assert second.locator("[data-testid=restore-banner]").is_hidden()


def test_undo_and_redo_labels_and_segments(browser_page, live_server, transactional_db, users) -> None:
    page = browser_page
    (mine,) = assign(LabellingItemFactory.create(scenario=vocabulary.EMOTION_SHIFT), users["annotator"])
    open_workbench(page, live_server, mine)
    version = saved_version(page)
    title = page.locator("[data-testid=workbench-title]")

    title.click()
    page.keyboard.press("Digit3")  # angry
    page.keyboard.press("Digit4")  # surprise, at once: still a step of its own
    page.keyboard.press("g")  # a segment
    assert page.locator("[data-testid=segments] tbody tr").count() == 1

    title.click()
    page.keyboard.press("Control+z")
    assert page.locator("[data-testid=segments] tbody tr").count() == 0
    assert page.locator("input[name=p_emotion][value=surprise]").is_checked()
    page.keyboard.press("Control+z")
    assert page.locator("input[name=p_emotion][value=angry]").is_checked()
    page.keyboard.press("Control+z")
    assert not page.locator("input[name=p_emotion]:checked").count()
    page.keyboard.press("Control+Shift+z")
    assert page.locator("input[name=p_emotion][value=angry]").is_checked()
    page.click("[data-testid=redo]")
    assert page.locator("input[name=p_emotion][value=surprise]").is_checked()
    page.click("[data-testid=redo]")
    assert page.locator("[data-testid=segments] tbody tr").count() == 1
    page.click("[data-testid=undo]")
    assert page.locator("[data-testid=segments] tbody tr").count() == 0

    # What autosave keeps is what the page shows after the undo.
    wait_for_save_after(page, version)

    def saved_after_undo() -> bool:
        mine.refresh_from_db()
        return mine.perception["emotion"] == "surprise" and mine.perception["emotion_segments"] == []

    wait_until(saved_after_undo, timeout=10, message="the undone state was never saved")


def test_the_waveform_zooms_with_keys_wheel_and_buttons(
    browser_page, live_server, transactional_db, users, screenshots
) -> None:
    page = browser_page
    (mine,) = assign(LabellingItemFactory.create(), users["annotator"])
    open_workbench(page, live_server, mine)
    waveform = page.locator("[data-testid=waveform]")
    # wavesurfer draws in a shadow root on the container's first child; its .scroll box scrolls.
    scroll_width = "el => el.firstElementChild.shadowRoot.querySelector('.scroll').scrollWidth"
    fitted = waveform.evaluate(scroll_width)
    assert waveform.get_attribute("data-zoom") == "0"
    height = waveform.bounding_box()["height"]
    assert height >= 120  # taller than before (110), fitted to the window

    page.locator("[data-testid=workbench-title]").click()
    page.keyboard.press("+")
    page.keyboard.press("+")
    page.wait_for_function("() => document.querySelector('[data-testid=waveform]').dataset.zoom !== '0'")
    zoomed = int(waveform.get_attribute("data-zoom"))
    page.wait_for_function(
        f"() => ({scroll_width})(document.querySelector('[data-testid=waveform]')) > {fitted}"
    )

    box = waveform.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -100)
    page.wait_for_function(
        f"() => Number(document.querySelector('[data-testid=waveform]').dataset.zoom) > {zoomed}"
    )
    page.screenshot(path=str(screenshots / "zoomed.png"), full_page=True)

    for _ in range(10):
        page.click("[aria-label='Zoom out']")
    assert waveform.get_attribute("data-zoom") == "0"


def test_progress_and_queue_counts(browser_page, live_server, transactional_db, users, screenshots) -> None:
    page = browser_page
    annotations = [
        assign(LabellingItemFactory.create(external_id=f"EE-000{n}"), users["annotator"])[0]
        for n in (1, 2, 3)
    ]
    submitted(annotations[0])
    log_in(page, live_server, "annotator", start="/accounts/login/?next=/annotate/")
    page.wait_for_url(f"{live_server.url}/annotate/")
    assert page.locator("[data-testid=count-open]").inner_text() == "2"
    assert page.locator("[data-testid=count-submitted]").inner_text() == "1"

    page.click("text=EE-0002")
    page.wait_for_selector("[data-testid=progress]")
    assert page.locator("[data-testid=progress]").inner_text() == "2 of 3"
    page.screenshot(path=str(screenshots / "progress.png"), full_page=True)


def test_segments_are_selected_moved_resized_and_labelled_by_keyboard(
    browser_page, live_server, transactional_db, users
) -> None:
    page = browser_page
    (mine,) = assign(LabellingItemFactory.create(scenario=vocabulary.EMOTION_SHIFT), users["annotator"])
    open_workbench(page, live_server, mine)
    title = page.locator("[data-testid=workbench-title]")
    title.click()
    page.keyboard.press("g")  # 0.00-1.00, its emotion list focused
    title.click()
    page.keyboard.press("s")  # select it (the only one)
    assert page.locator("[data-testid=segments] tbody tr.active").count() == 1
    page.keyboard.press(".")  # later by 0.05 s
    page.keyboard.press(".")
    page.keyboard.press("Shift+ArrowLeft")  # end earlier by 0.05 s
    page.keyboard.press("l")  # label: the emotion list takes the keys
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Segment 1 emotion"
    page.select_option("[aria-label='Segment 1 emotion']", "fear")
    page.locator("[aria-label='Segment 1 emotion']").press("Escape")

    def moved_and_labelled() -> bool:
        saved = segments_of(mine)
        return len(saved) == 1 and saved[0] == {"start": 0.1, "end": 1.05, "emotion": "fear", "words": ""}

    wait_until(moved_and_labelled, timeout=10, message=f"segment not saved as edited: {segments_of(mine)}")
    title.click()
    page.keyboard.press("s")
    page.keyboard.press("Delete")
    assert page.locator("[data-testid=segments] tbody tr").count() == 0
    wait_until(lambda: segments_of(mine) == [], timeout=10, message="the removal was not saved")


def test_an_offline_edit_restored_after_a_reload_is_no_conflict_but_a_second_tab_is(
    browser_page, live_server, transactional_db, users
) -> None:
    """One tab: edit offline, reload, restore the kept copy. The page that reload replaced may save
    on its way out after the new page was made from the older version; that save is this tab's own
    (its page-session id), so restoring is not refused as another tab's. A real second tab still is."""
    page = browser_page
    (mine,) = assign(LabellingItemFactory.create(), users["annotator"])
    open_workbench(page, live_server, mine)
    saved_version(page)
    page.context.set_offline(True)
    page.fill("textarea[name=p_situation]", "typed offline")
    page.wait_for_selector("[data-testid=kept-note]")
    page.context.set_offline(False)
    page.reload()
    page.wait_for_selector("[data-testid=restore-banner]:visible")
    saved_version(page)
    page.wait_for_timeout(300)  # the replaced page's own page-hide send, if it came, has landed
    mine.refresh_from_db()
    shown = mine.version
    # The replaced page's page-hide send, landing after this page was made from an older version.
    page.evaluate(
        """() => { const data = new FormData(document.querySelector('form[data-workbench]'));
        data.set('p_situation', 'sent on the way out'); navigator.sendBeacon(
        document.querySelector('form[data-workbench]').getAttribute('hx-post'), data); }"""
    )

    def version_is(number: int) -> bool:
        mine.refresh_from_db()
        return mine.version == number

    wait_until(lambda: version_is(shown + 1), timeout=10, message="the page-hide send was never saved")
    page.click("[data-testid=restore-kept]")
    wait_until(lambda: version_is(shown + 2), timeout=10, message="the restored work was never saved")
    assert mine.perception["situation"] == "typed offline"
    assert "another tab" not in page.locator(STATUS).inner_text()
    assert page.locator(STATUS).get_attribute("data-stale") != "true"

    # A second tab made from an older version is still told.
    second = page.context.new_page()
    second.goto(f"{live_server.url}/annotate/{mine.pk}/")
    saved_version(second)
    page.fill("textarea[name=p_situation]", "the first tab, later")
    wait_until(lambda: version_is(shown + 3), timeout=10, message="the first tab's edit was never saved")
    second.fill("textarea[name=p_situation]", "the second tab, from an older version")
    second.wait_for_selector("[data-testid=save-status][data-stale=true]")
    assert "saved from another tab or window" in second.locator(STATUS).inner_text()
