"""Real Chromium at 1,400 x 900: a five-turn conversation is as tall as the work of rating it. The
turn being rated opens in full with its questions and fits the window; the other turns are compact
rows (a line of text and a player per speaker) that show the whole turn on request."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from annotation.recording.models import Item
from evaluation.studies.models import StudyTurn
from evaluation.studies.workflows import record_turn_playback, submit_turn_rating
from tests.evaluation.studies.dialogues.support import (
    build_dialogue_world,
    make_dialogue_study,
    show_long_ago,
)
from tests.evaluation.studies.support import current
from tests.support.browser import log_in

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1400, 900
LONG_TEXT = (
    "I kept telling myself it was only a job, but I had been there eleven years, I knew everyone's "
    "children by name, and on the last day nobody even walked me to the door or said goodbye properly."
)


def _box(page: Any, selector: str) -> dict[str, float]:
    return page.locator(selector).evaluate(
        "node => { const r = node.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; }"
    )


def _clamped(page: Any, selector: str) -> bool:
    return page.locator(selector).evaluate("node => node.scrollHeight > node.clientHeight + 1")


def test_a_five_turn_conversation_fits_two_screens_with_the_rated_turn_in_view(
    open_browser_page: Callable[..., AbstractContextManager[Any]],
    live_server,
    users,
    make_user,
    screenshots: Path,
):
    rater = users["evaluator"]
    world = build_dialogue_world(make_user, n_systems=1, n_dialogues=1, turns=5)
    Item.objects.filter(dialogue=world.dialogues[0], turn=2).update(text=LONG_TEXT)
    study = make_dialogue_study(world, [rater], users["admin"], items_per_system=1)

    with open_browser_page(viewport={"width": WIDTH, "height": HEIGHT}) as page:
        log_in(page, live_server, "evaluator")
        page.click("text=Start")
        page.wait_for_selector("[data-testid=dialogue-rating-page]")
        # The first visit (instructions open): turn 1 in full, turns 2-5 compact, all within two screens.
        assert page.evaluate("document.documentElement.scrollHeight") <= 2 * HEIGHT
        assert page.locator("#turn-1 input[type=radio]").count() == 4 * 5
        for later in (2, 3, 4, 5):
            assert page.locator(f"#turn-{later}.compact").count() == 1
            assert page.locator(f"#turn-{later} input[type=radio]").count() == 0
            assert page.locator(f"#turn-{later} .reply-audio").is_visible()
        first = _box(page, "#turn-1")
        assert first["bottom"] - first["top"] <= HEIGHT  # the whole turn, questions and all, on one screen
        page.screenshot(path=str(screenshots / "dialogue-turn-1-1400.png"), full_page=True)

        # A compact turn shows a line of each speaker's text; its button shows the whole turn.
        assert _clamped(page, "#turn-2 .user-turn .script-text")
        assert not page.locator("#turn-3 .turn-more").is_visible()  # its lines are whole already
        # At 320 px turn 3's lines are cut too: its button appears (measured again at each width).
        page.set_viewport_size({"width": 320, "height": HEIGHT})
        page.wait_for_selector("#turn-3 .turn-more", state="visible")
        assert _clamped(page, "#turn-3 .user-turn .script-text")
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        page.wait_for_selector("#turn-3 .turn-more", state="hidden")
        page.click("#turn-2 .turn-more")
        assert page.locator("#turn-2 .turn-more").get_attribute("aria-expanded") == "true"
        assert not _clamped(page, "#turn-2 .user-turn .script-text")
        page.click("#turn-2 .turn-more")
        assert _clamped(page, "#turn-2 .user-turn .script-text")

        # Three turns rated: the page opens on turn 4 with its questions and its save button in view.
        assignment = current(study, rater)
        played = show_long_ago(assignment)
        for reply in StudyTurn.objects.filter(stimulus=assignment.stimulus).order_by("turn")[:3]:
            played += timedelta(seconds=reply.audio_seconds + 1)
            record_turn_playback(assignment, reply.turn, now=played)
            submit_turn_rating(assignment.pk, reply.turn, dict.fromkeys(study.dimensions, 4))
        page.goto(f"{live_server.url}{reverse('evaluation:evaluator_queue')}")  # a fresh load, not a jump
        page.goto(f"{live_server.url}{reverse('evaluation:rate_study', args=[study.public_id])}#turn-4")
        page.wait_for_selector("#turn-4.current")
        assert page.evaluate("document.documentElement.scrollHeight") <= 2 * HEIGHT
        for saved in (1, 2, 3):
            assert "Naturalness 4" in page.inner_text(f"[data-testid=turn-saved-{saved}]")
            assert page.locator(f"#turn-{saved} input[type=radio]").count() == 0
        turn = _box(page, "#turn-4")
        assert turn["top"] >= 0 and _box(page, "[data-testid=save-turn-4]")["bottom"] <= HEIGHT
        page.screenshot(path=str(screenshots / "dialogue-turn-4-1400.png"))
        page.screenshot(path=str(screenshots / "dialogue-turn-4-1400-full.png"), full_page=True)
