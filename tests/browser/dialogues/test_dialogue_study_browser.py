"""Real Chromium: an evaluator rates a conversation turn by turn; turn 2's questions open only after
its reply played through (the server records each playback), and the ratings are saved per turn."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from evaluation.studies.models import StudyAssignment, StudyRating
from tests.evaluation.studies.dialogues.support import (
    build_dialogue_world,
    make_dialogue_study,
    play_and_rate_dialogue,
)
from tests.evaluation.studies.support import current
from tests.support.browser import log_in

pytestmark = pytest.mark.browser

SCORES = {"content_helpfulness": "4", "naturalness": "5", "prosody": "3", "emotional_alignment": "4"}


def _play_reply(page: Any, turn: int) -> None:
    page.locator(f"#turn-{turn} .reply-audio").evaluate("audio => audio.play()")


def _choose(page: Any, turn: int) -> None:
    for dimension, score in SCORES.items():
        page.check(f"#turn-{turn} input[name=score_{dimension}][value='{score}']")


def test_turn_two_opens_only_after_its_reply_played_and_both_turns_are_saved(
    open_browser_page: Callable[..., AbstractContextManager[Any]],
    live_server,
    users,
    make_user,
    screenshots: Path,
):
    rater = users["evaluator"]
    world = build_dialogue_world(make_user, n_systems=2, n_dialogues=2, turns=2)
    study = make_dialogue_study(world, [rater], users["admin"], items_per_system=2)
    first = current(study, rater)

    with open_browser_page("--autoplay-policy=no-user-gesture-required") as page:
        log_in(page, live_server, "evaluator")
        page.click("text=Start")
        page.wait_for_selector("[data-testid=dialogue-rating-page]")
        assert "Conversation 1 of 4" in page.inner_text("[data-testid=progress-text]")
        for name in (system.name for system in world.systems):
            assert name not in page.content()
        assert page.locator("#turn-1 input[type=radio]").first.is_disabled()
        assert page.locator("#turn-2 input[type=radio]").count() == 0  # asked once turn 1 is rated
        page.screenshot(path=str(screenshots / "dialogue-locked.png"), full_page=True)

        # Turn 2's reply started first: the page says at once which reply comes first.
        page.locator("#turn-2 .reply-audio").evaluate("audio => audio.play()")
        page.wait_for_selector("[data-testid=playback-status-2]:has-text('Play the reply of turn 1 first')")
        page.locator("#turn-2 .reply-audio").evaluate("audio => { audio.pause(); audio.currentTime = 0; }")

        _play_reply(page, 1)
        page.wait_for_selector("#turn-1[data-unlocked=true]", timeout=20_000)
        assert page.locator("#turn-1 .reply-audio").evaluate("audio => audio.ended")
        assert page.locator("#turn-1 input[type=radio]").first.is_enabled()
        assert page.locator("#turn-2 input[type=radio]").count() == 0  # still to come
        _choose(page, 1)
        page.click("[data-testid=save-turn-1]")
        page.wait_for_selector("[data-testid=turn-saved-1]")
        assert "Naturalness 5" in page.inner_text("[data-testid=turn-saved-1]")
        assert page.locator("#turn-2 input[type=radio]").first.is_disabled()  # a reload does not open it
        page.screenshot(path=str(screenshots / "dialogue-turn-1-saved.png"), full_page=True)

        _play_reply(page, 2)
        page.wait_for_selector("#turn-2[data-unlocked=true]", timeout=20_000)
        assert page.locator("#turn-2 input[type=radio]").first.is_enabled()
        assert "questions are open" in page.inner_text("[data-testid=playback-status-2]")
        page.screenshot(path=str(screenshots / "dialogue-turn-2-open.png"), full_page=True)
        _choose(page, 2)
        page.click("[data-testid=save-turn-2]")
        page.wait_for_selector("[data-testid=progress-text]:has-text('Conversation 2 of 4')")

        while (assignment := StudyAssignment.objects.next_for(study, rater)) is not None:
            play_and_rate_dialogue(assignment, lambda turn, dimension: 3)
        page.click("text=Log out")
        log_in(page, live_server, "admin")
        page.goto(f"{live_server.url}/manage/studies/{study.pk}/")
        chart = page.locator("[data-testid=turn-chart]")
        page.wait_for_function("document.getElementById('turn-chart').dataset.whiskers !== undefined")
        assert chart.get_attribute("data-rendered") == "8"  # 2 systems x 4 dimensions
        assert int(chart.get_attribute("data-whiskers") or 0) == 16  # ... x 2 turns
        assert "Turn 2" in page.inner_text("[data-testid=turn-table]")
        page.screenshot(path=str(screenshots / "dialogue-results.png"), full_page=True)

    first = StudyAssignment.objects.get(pk=first.pk)
    assert first.submitted_at is not None
    saved = StudyRating.objects.filter(assignment=first)
    assert sorted(saved.values_list("turn", "dimension", "score")) == sorted(
        (turn, dimension, int(score)) for turn in (1, 2) for dimension, score in SCORES.items()
    )
    assert set(first.turn_playbacks.values_list("turn", flat=True)) == {1, 2}
