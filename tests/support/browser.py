"""Helpers for tests that drive real Chromium through Playwright."""

from __future__ import annotations

from typing import Any

from tests.factories import TEST_PASSWORD


def log_in(page: Any, live_server: Any, username: str, *, start: str = "/accounts/login/") -> None:
    """Log in through the real login form, starting at `start` (a page that shows the form).

    Every user the test fixtures make has TEST_PASSWORD. Callers wait for the page they expect.
    """
    page.goto(f"{live_server.url}{start}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", TEST_PASSWORD)
    page.click("button[type=submit]")
