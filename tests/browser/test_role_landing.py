"""Real Chromium: every role logs in and lands on its own work queue."""

from __future__ import annotations

import pytest

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
        page.goto(f"{live_server.url}/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", "pw-for-tests-123")
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}{path}")
        assert page.locator("[data-testid=current-user]").inner_text() == username
        page.click("text=Log out")
        page.wait_for_url(f"{live_server.url}/accounts/login/")
