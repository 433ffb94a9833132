"""Real Chromium: a newcomer who has no account yet reads the docs in the site, from the footer's
Docs link to the user guide, as rendered Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser]


def test_a_newcomer_reads_the_user_guide_from_the_docs_link(
    browser_page: Any, live_server: Any, tmp_path: Path
) -> None:
    page = browser_page
    # given the login page a newcomer lands on
    page.goto(f"{live_server.url}/accounts/login/")
    # when they follow the footer's Docs link, then the README's link to the user guide
    page.click("[data-testid=docs-link]")
    page.wait_for_url(f"{live_server.url}/docs/")
    assert page.locator("article h1").inner_text() == "EchoStudio"
    page.click("article a:has-text('User guide')")
    page.wait_for_url(f"{live_server.url}/docs/user-guide/")
    # then the user guide reads as a page, headings and tables rendered, with no login asked for
    assert page.title() == "User guide · EchoStudio"
    assert page.locator("article h2#working-in-the-studio").inner_text() == "Working in the studio"
    assert page.locator("article table").count() >= 1
    assert page.locator("nav.docs-contents a[aria-current=page]").inner_text() == "User guide"
    page.screenshot(path=str(tmp_path / "user-guide.png"), full_page=True)
    # and a link to another page's heading lands on that heading
    page.click("article a:has-text('quick start')")
    page.wait_for_url(f"{live_server.url}/docs/#quick-start")
    assert page.locator("h2#quick-start").is_visible()
