"""Real Chromium: an annotator labels with keyboard and mouse, reloads mid-way, submits; a lead adjudicates."""

from __future__ import annotations

import re

import pytest

from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from tests.conftest import wait_until
from tests.support.browser import log_in
from webapp.roles import Role

pytestmark = pytest.mark.browser


def log_in_to(page, live_server, username: str, path: str) -> None:
    log_in(page, live_server, username, start=f"/accounts/login/?next={path}")
    page.wait_for_url(f"{live_server.url}{path}")


def saved_version(page) -> int:
    page.wait_for_function(
        "document.querySelector('[data-testid=save-status]').textContent.includes('Draft saved')"
    )
    text = page.locator("[data-testid=save-status]").inner_text()
    match = re.search(r"version (\d+)", text)
    assert match is not None, text
    return int(match.group(1))


def wait_for_save_after(page, version: int) -> int:
    page.wait_for_function(
        "v => { const m = /Draft saved.*version (\\d+)/.exec("
        "document.querySelector('[data-testid=save-status]').textContent); return m && Number(m[1]) > v; }",
        arg=version,
    )
    return saved_version(page)


def test_annotate_reload_submit_then_adjudicate(
    browser_page, live_server, transactional_db, users, make_user
) -> None:
    page = browser_page
    item = LabellingItemFactory.create(external_id="EE-0001")
    others = [make_user(Role.ANNOTATOR, name) for name in ("ana", "ben")]
    mine, *theirs = assign(item, users["annotator"], *others)
    for annotation in theirs:
        submitted(annotation)

    # The annotator opens the item from the queue; the waveform loads the recording.
    log_in_to(page, live_server, "annotator", "/annotate/")
    page.click(f"text={item.external_id}")
    page.wait_for_selector("[data-waveform][data-ready=true]")
    first_version = saved_version(page)

    # Keyboard: 3 = angry, Shift+2 = negative, Alt+2 = medium intensity; speed up playback with ].
    page.locator("[data-testid=workbench-title]").click()
    page.keyboard.press("Digit3")
    page.keyboard.press("Shift+Digit2")
    page.keyboard.press("Alt+Digit2")
    page.keyboard.press("]")
    assert page.locator("[data-testid=speed]").input_value() == "1.25"
    page.keyboard.press("Space")
    page.wait_for_function("document.querySelector('[data-testid=playhead]').textContent !== '0.00 s'")
    page.keyboard.press("Space")
    # Mouse: two stressed words, and the first lines of the situation.
    page.click("[data-testid=script-words] >> text=great")
    page.click("[data-testid=script-words] >> text=love")
    page.fill("textarea[name=p_situation]", "Dreading a wet Monday")
    wait_for_save_after(page, first_version)

    def draft_saved() -> bool:
        mine.refresh_from_db()
        return mine.perception.get("situation") == "Dreading a wet Monday"

    wait_until(draft_saved, timeout=10, message="the draft was never autosaved")

    # Reload mid-way: everything done so far is back.
    page.reload()
    page.wait_for_selector("[data-waveform][data-ready=true]")
    assert page.locator("input[name=p_emotion][value=angry]").is_checked()
    assert page.locator("input[name=p_polarity][value=negative]").is_checked()
    assert page.locator("input[name=p_intensity][value=medium]").is_checked()
    assert page.locator("[data-word=great]").get_attribute("aria-pressed") == "true"
    assert page.locator("textarea[name=p_situation]").input_value() == "Dreading a wet Monday"
    # The acoustic suggestions were pre-filled and kept.
    assert page.locator("input[name=p_pitch][value=high]").is_checked()
    assert page.locator("input[name=p_intonation][value=falling]").is_checked()

    # Finish the labels and submit with Ctrl+Enter.
    page.fill("textarea[name=p_prosody_caption]", "Flat, drawn-out, heavy stress on great")
    page.check("input[name=p_modality_conflict]")
    page.check("input[name=p_conflict_kind][value=sarcasm]")
    page.fill("textarea[name=t_context]", "Sarcastic complaint about Mondays")
    page.fill("textarea[name=t_latent_need]", "To have the frustration acknowledged")
    page.fill("textarea[name=t_core_demand]", "Empathy, not advice")
    page.check("input[aria-label='Recommend Emotional validation']")
    page.check("input[aria-label='Do not recommend Information']")
    page.click("text=+ premature problem-solving")
    page.locator("textarea[name=t_core_demand]").press("Control+Enter")
    page.wait_for_url(f"{live_server.url}/annotate/")
    assert "Submitted EE-0001." in page.content()

    mine.refresh_from_db()
    assert mine.status == Annotation.Status.SUBMITTED
    assert mine.perception["stressed_words"] == ["great", "love"]
    assert mine.tom["constraints"] == ["premature problem-solving"]
    assert mine.revisions.count() == 1

    # The lead adjudicates: all three agree on the categorical fields here except what differs.
    page.click("text=Log out")
    log_in_to(page, live_server, "lead", "/adjudicate/")
    page.click(f"[data-testid=adjudication-queue] >> text={item.external_id}")
    page.wait_for_selector("[data-testid=comparison]")
    assert page.locator("tr[data-field='perception.emotion']").get_attribute("data-agreed") == "true"
    page.click("[data-testid=save-gold]")
    page.wait_for_url(f"{live_server.url}/adjudicate/")
    gold = GoldReference.objects.get(item=item, is_current=True)
    assert gold.adjudicated_by == users["lead"]
    assert gold.version == 1
    assert Item.objects.get(pk=item.pk).state == Item.State.GOLD


def test_emotion_segments_are_picked_on_the_waveform(
    browser_page, live_server, transactional_db, users
) -> None:
    page = browser_page
    item = LabellingItemFactory.create(scenario="emotion-shift")
    (mine,) = assign(item, users["annotator"])
    log_in_to(page, live_server, "annotator", f"/annotate/{mine.pk}/")
    page.wait_for_selector("[data-waveform][data-ready=true]")
    version = saved_version(page)

    # Mouse: drag across the first half of the waveform to mark a region.
    box = page.locator("[data-testid=waveform]").bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 4, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.3, y, steps=5)
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)
    page.mouse.up()
    page.wait_for_selector("[data-testid=segments] tbody tr")
    page.select_option("[aria-label='Segment 1 emotion']", "happy")
    page.fill("[aria-label='Segment 1 words']", "Oh great")
    page.locator("[aria-label='Segment 1 words']").press("Tab")
    # Keyboard: seek to the end and press g for the second segment.
    page.locator("[data-testid=workbench-title]").click()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("g")
    page.select_option("[aria-label='Segment 2 emotion']", "sad")
    wait_for_save_after(page, version)

    def both_segments_saved() -> bool:
        mine.refresh_from_db()
        return [s["emotion"] for s in mine.perception.get("emotion_segments", [])] == ["happy", "sad"]

    wait_until(both_segments_saved, timeout=10, message="the segments were never autosaved")

    page.reload()
    page.wait_for_selector("[data-waveform][data-ready=true]")
    assert page.locator("[data-testid=segments] tbody tr").count() == 2
    mine.refresh_from_db()
    segments = mine.perception["emotion_segments"]
    assert [segment["emotion"] for segment in segments] == ["happy", "sad"]
    assert segments[0]["words"] == "Oh great"
    assert 0.0 <= segments[0]["start"] < 0.2 and 0.6 < segments[0]["end"] < 0.9
    assert segments[1]["start"] == segments[0]["end"] and segments[1]["end"] == 1.5


def test_a_second_tab_is_told_its_save_is_stale(browser_page, live_server, transactional_db, users) -> None:
    first = browser_page
    item = LabellingItemFactory.create()
    (mine,) = assign(item, users["annotator"])
    log_in_to(first, live_server, "annotator", f"/annotate/{mine.pk}/")
    second = first.context.new_page()
    second.goto(f"{live_server.url}/annotate/{mine.pk}/")
    version = saved_version(second)

    first.fill("textarea[name=p_situation]", "typed in the first tab")
    wait_for_save_after(first, version)
    second.fill("textarea[name=p_situation]", "typed in the second tab")
    second.wait_for_selector("[data-testid=save-status][data-stale=true]")
    assert "saved from another tab or window" in second.locator("[data-testid=save-status]").inner_text()
    mine.refresh_from_db()
    assert mine.perception["situation"] == "typed in the first tab"
