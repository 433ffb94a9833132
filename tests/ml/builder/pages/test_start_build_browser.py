"""Real Chromium: an admin starts a build from the builds list, is told what is wrong with a bad
configuration (nothing stored), fixes it in place and lands on the new build's page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ml.builder.models import Build
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def test_an_admin_starts_a_build_from_the_builds_list(
    browser_page, live_server, transactional_db, users, monkeypatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("webapp.jobs.enqueue", lambda job: None)  # no worker: the plan job stays queued
    page = browser_page
    log_in(page, live_server, "admin", start="/accounts/login/?next=/manage/builds/")
    page.wait_for_url(f"{live_server.url}/manage/builds/")
    page.click("[data-testid=start-build]")
    page.wait_for_selector("[data-testid=start-build-form]")
    opened = json.loads(page.input_value("textarea[name=config]"))
    assert opened["endpoints"][0]["model"] == "your-model"

    page.fill("input[name=name]", "browser pilot")
    opened["query_min_score"] = 7
    page.fill("textarea[name=config]", json.dumps(opened, indent=2))
    page.click("[data-testid=start-build-form] button[type=submit]")
    errors = page.locator("[data-testid=form-errors]").inner_text()
    assert "Not started: filter scores are on a 1-5 scale." in errors
    page.screenshot(path=str(tmp_path / "start-build-refused.png"), full_page=True)
    assert not Build.objects.exists()

    opened["query_min_score"] = 4
    opened["endpoints"][0].update(base_url="http://llm:8000/v1", model="m")
    page.fill("textarea[name=config]", json.dumps(opened, indent=2))
    page.click("[data-testid=start-build-form] button[type=submit]")
    build = Build.objects.get(name="browser pilot")
    page.wait_for_url(f"{live_server.url}/manage/builds/{build.pk}/")
    assert "browser pilot started" in page.content()
    assert build.status == "running" and build.config["query_min_score"] == 4
    page.screenshot(path=str(tmp_path / "start-build-started.png"), full_page=True)
    print(tmp_path)
