"""Real Chromium, cut off from the internet: /api/docs/ renders Swagger UI from the project's own files."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pytest

from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def test_the_api_docs_render_offline(browser_page, live_server, users) -> None:
    page = browser_page
    ours = urlparse(live_server.url).netloc
    refused: list[str] = []

    def only_this_server(route: Any) -> None:
        if urlparse(route.request.url).netloc == ours:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", only_this_server)
    log_in(page, live_server, "admin")
    page.wait_for_url("**/manage/")
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
    assert "EchoStudio API" in page.locator(".swagger-ui .info .title").inner_text()
    page.wait_for_selector(".opblock-summary-path[data-path='/api/leaderboard/']")
    assert page.locator(".opblock").count() > 30
    assert refused == []
