"""Real Chromium, keyboard only: a conversation is rated with the rating pages' one key table
(static/js/rating_keys.js). The listed keys are the keys the page runs; a locked turn takes no
score; a focused control or player keeps its own Space; Esc releases focus; a digit after a click on a radio
scores the highlighted question and the next arrow moves on without changing a score; and the
progress ("Conversation 1 of 2, turn 2 of 2" and its bar) moves with every saved turn."""

from __future__ import annotations

from typing import Any

import pytest

from evaluation.studies.models import StudyAssignment, StudyRating
from tests.evaluation.studies.dialogues.support import build_dialogue_world, make_dialogue_study
from tests.evaluation.studies.support import current
from tests.support.browser import listed_keys, log_in, press_and_settle

pytestmark = pytest.mark.browser

DIMENSIONS = ["content_helpfulness", "naturalness", "prosody", "emotional_alignment"]


def _scores(page: Any, turn: int) -> dict[str, str]:
    """The scores chosen in the turn's questions, by dimension."""
    return page.evaluate(
        """(turn) => Object.fromEntries(Array.from(document.querySelectorAll(`#turn-${turn} .question`),
            (q) => [q.dataset.dimension, (q.querySelector('input:checked') || {}).value || '']))""",
        turn,
    )


def _active(page: Any, turn: int) -> str:
    return page.locator(f"#turn-{turn} .question.active").get_attribute("data-dimension") or ""


def _focused(page: Any) -> str:
    return page.evaluate("document.activeElement === document.body ? 'body' : document.activeElement.tagName")


def _progress(page: Any) -> tuple[str, str]:
    text = page.inner_text("[data-testid=progress-text]")
    return text, page.get_attribute("[data-testid=progress-bar]", "aria-valuenow") or ""


def _play_by_key(page: Any, turn: int) -> None:
    """Space plays the reply of the turn being rated; its questions open once the server has
    recorded the playback (the real audio plays to its end)."""
    press_and_settle(page, " ")
    assert not page.locator(f"#turn-{turn} .reply-audio").evaluate("audio => audio.paused")
    page.wait_for_selector(f"#turn-{turn}[data-unlocked=true]", timeout=20_000)
    assert page.locator(f"#turn-{turn} .reply-audio").evaluate("audio => audio.ended")


def _score_by_keys(page: Any, turn: int, scores: list[str]) -> None:
    """As the list says: a digit scores the highlighted question, the down arrow moves on."""
    for score in scores:
        press_and_settle(page, score, "ArrowDown")
    assert list(_scores(page, turn).values()) == scores


def test_a_conversation_is_rated_by_keyboard_and_the_progress_moves_with_every_saved_turn(
    browser_page: Any, live_server: Any, users: dict[str, Any], make_user: Any
) -> None:
    page = browser_page
    rater = users["evaluator"]
    world = build_dialogue_world(make_user, n_systems=1, n_dialogues=2, turns=2)
    study = make_dialogue_study(world, [rater], users["admin"], items_per_system=2)
    first = current(study, rater)

    log_in(page, live_server, "evaluator")
    page.click("text=Start")
    page.wait_for_selector("[data-testid=dialogue-rating-page]")
    # The same keys as the sample rating page, listed from the table the handlers run.
    assert listed_keys(page) == ["Space", "Q", "1 – 5", "↑ ↓", "Enter", "Esc"]
    assert _progress(page) == ("Conversation 1 of 2, turn 1 of 2", "0")

    # Locked: a digit chooses nothing and says why; Enter saves nothing.
    press_and_settle(page, "3", "Enter")
    assert set(_scores(page, 1).values()) == {""}
    assert "Play the whole reply first" in page.inner_text("[data-testid=form-hint-1]")

    # A focused control keeps its own Space (the instructions' summary opens and closes), and Esc
    # hands the keys back to the page.
    details = page.locator("details")
    was_open = details.evaluate("d => d.open")
    page.locator("details summary").focus()
    press_and_settle(page, " ")
    assert details.evaluate("d => d.open") is not was_open
    assert page.locator("#turn-1 .reply-audio").evaluate("audio => audio.paused")
    press_and_settle(page, "Escape")
    assert _focused(page) == "body"
    # So does a focused player: only it plays, not the reply as well (one recording at a time).
    page.evaluate(
        "window.__played = []; document.querySelectorAll('audio').forEach((audio) =>"
        " audio.addEventListener('play', () => window.__played.push(audio.getAttribute('aria-label'))))"
    )
    page.locator("#turn-2 .user-audio").focus()
    press_and_settle(page, " ")
    page.wait_for_function("window.__played.length > 0")
    press_and_settle(page, "Escape")
    assert page.evaluate("window.__played") == ["Turn 2: the user speaking"]
    assert _focused(page) == "body"

    _play_by_key(page, 1)
    assert _active(page, 1) == DIMENSIONS[0]

    # After a click on a radio, a digit scores the highlighted question and releases the focus, so
    # the next arrow moves the highlight instead of changing the score.
    page.click(f"#turn-1 input[name=score_{DIMENSIONS[0]}][value='2']")
    assert _focused(page) == "INPUT"
    press_and_settle(page, "4")
    assert _focused(page) == "body"
    press_and_settle(page, "ArrowDown")
    assert _scores(page, 1)[DIMENSIONS[0]] == "4" and _active(page, 1) == DIMENSIONS[1]

    # Enter with a question unscored: nothing is saved, the highlight goes to the one left.
    press_and_settle(page, "5", "ArrowDown", "Enter")
    assert _active(page, 1) == DIMENSIONS[2]
    assert "Score every question" in page.inner_text("[data-testid=form-hint-1]")
    assert not StudyRating.objects.filter(assignment=first).exists()

    # Esc releases a focused radio too: the arrows then move the highlight, not the choice.
    page.locator(f"#turn-1 input[name=score_{DIMENSIONS[1]}][value='5']").focus()
    press_and_settle(page, "Escape", "ArrowDown")
    assert _focused(page) == "body"
    assert _scores(page, 1)[DIMENSIONS[1]] == "5" and _active(page, 1) == DIMENSIONS[3]
    press_and_settle(page, "ArrowUp", "3", "ArrowDown", "4")
    assert _scores(page, 1) == dict(zip(DIMENSIONS, ["4", "5", "3", "4"], strict=True))

    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=turn-saved-1]")
    assert _progress(page) == ("Conversation 1 of 2, turn 2 of 2", "25")
    assert "Naturalness 5" in page.inner_text("[data-testid=turn-saved-1]")

    _play_by_key(page, 2)
    _score_by_keys(page, 2, ["2", "3", "4", "5"])
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=progress-text]:has-text('Conversation 2 of 2, turn 1 of 2')")
    assert _progress(page)[1] == "50"

    first = StudyAssignment.objects.get(pk=first.pk)
    assert first.submitted_at is not None
    assert sorted(
        StudyRating.objects.filter(assignment=first).values_list("turn", "dimension", "score")
    ) == sorted(
        [(1, d, s) for d, s in zip(DIMENSIONS, [4, 5, 3, 4], strict=True)]
        + [(2, d, s) for d, s in zip(DIMENSIONS, [2, 3, 4, 5], strict=True)]
    )
