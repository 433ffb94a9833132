"""Real Chromium: the leaderboard of a judge that has judged nothing loads without a script error."""

from __future__ import annotations

import pytest

from tests.factories import JudgeConfigFactory
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def test_the_empty_leaderboard_raises_no_script_error(browser_page, live_server, users) -> None:
    judge = JudgeConfigFactory.create(name="fresh-judge")
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    log_in(page, live_server, "admin")
    page.wait_for_url(f"{live_server.url}/manage/")
    page.goto(f"{live_server.url}/results/leaderboard/?judge={judge.pk}")
    page.wait_for_load_state("load")
    assert page.locator("[data-testid=nothing-judged]").is_visible()
    assert errors == []
