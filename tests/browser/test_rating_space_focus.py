"""Real Chromium: Space on a rating page plays the sample being rated, whichever player has focus.

Issue 44: with the user's query player focused (where a first Tab or click could leave it), Space
was that player's own key and played the query, so the sample's gate never opened. The page now
opens with the reply's player focused, and Space toggles the reply from either player.
"""

from __future__ import annotations

import pytest

from tests.evaluation.studies.support import build_world, make_study
from tests.support.browser import log_in, wait_for_keys

pytestmark = pytest.mark.browser

PLAYING = "(id) => !document.getElementById(id).paused"


def test_space_plays_the_rated_sample_even_from_the_query_player(browser_page, live_server, users, make_user):
    page = browser_page
    world = build_world(make_user, n_systems=2, n_items=3)
    make_study(world, [users["evaluator"]], users["admin"], items_per_system=2, dimensions=["naturalness"])
    log_in(page, live_server, "evaluator")
    page.click("text=Start")
    page.wait_for_selector("[data-testid=rating-page]")
    wait_for_keys(page)
    assert page.locator("#query-audio").count() == 1

    first_focus = page.evaluate("document.activeElement.id")

    page.focus("#query-audio")
    page.keyboard.press(" ")
    page.wait_for_function(PLAYING, arg="response-audio", timeout=10_000)
    assert page.evaluate("document.getElementById('query-audio').paused")
    assert page.evaluate("document.activeElement.id") == "query-audio"  # focus stays where it was
    # The reply plays to its end and the questions open: the gate saw the right sample.
    page.wait_for_selector("#rating[data-unlocked=true]", timeout=60_000)
    assert page.evaluate("document.getElementById('query-audio').currentTime") == 0

    # The first focus was the sample's own player, named for assistive tech.
    assert first_focus == "response-audio"
    assert page.get_attribute("#response-audio", "aria-label") == "The assistant's reply"

    # Q still plays the query, from the reply's player too; Space there pauses nothing but the reply.
    page.focus("#response-audio")
    page.keyboard.press("q")
    page.wait_for_function(PLAYING, arg="query-audio", timeout=10_000)
    page.keyboard.press(" ")
    page.wait_for_function(PLAYING, arg="response-audio", timeout=10_000)
    assert page.evaluate("document.getElementById('query-audio').paused")
