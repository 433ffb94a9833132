"""Real Chromium: every role logs in and lands on its own work queue."""

from __future__ import annotations

import pytest

from tests.support.browser import log_in

pytestmark = pytest.mark.browser

EXPECTED = {
    "actor": "/studio/",
    "reviewer": "/review/",
    "annotator": "/annotate/",
    "lead": "/adjudicate/",
    "evaluator": "/rate/",
    "admin": "/manage/",
}


def test_each_role_lands_on_its_queue(browser_page, live_server, users) -> None:
    page = browser_page
    for username, path in EXPECTED.items():
        log_in(page, live_server, username, start="/")
        page.wait_for_url(f"{live_server.url}{path}")
        assert page.locator("[data-testid=current-user]").inner_text() == username
        page.click("text=Log out")
        page.wait_for_url(f"{live_server.url}/accounts/login/")
