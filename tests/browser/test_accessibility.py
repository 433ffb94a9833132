"""Real Chromium + axe-core (npm, `make install-dev`): each role's main pages hold no serious or
critical WCAG 2.1 A/AA violation, on the demo data (items to record, review, label and adjudicate)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.conftest import skip_or_fail
from tests.factories import TEST_PASSWORD
from tests.support.browser import log_in
from webapp.models import User

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("media_root")]

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

# Per demo user: the pages they work on, and a pattern of a link on them to one piece of work.
PAGES: dict[str, tuple[list[str], str | None]] = {
    "actor": (["/studio/"], r"^/studio/items/[^/]+/$"),
    "reviewer1": (["/review/"], r"^/review/[0-9a-f-]{36}/$"),
    "annotator1": (["/annotate/"], r"^/annotate/\d+/$"),
    "lead": (["/adjudicate/", "/agreement/", "/gold/"], r"^/adjudicate/\d+/$"),
    "evaluator1": (["/rate/"], None),
    "admin": (
        [
            "/manage/",
            "/manage/recording/",
            "/manage/systems/",
            "/manage/judges/",
            "/manage/judge-runs/",
            "/results/leaderboard/",
            "/results/agreement/",
            "/manage/studies/",
            "/manage/builds/",
            "/manage/jobs/",
            "/dialogues/",
            "/accounts/tokens/",
        ],
        r"^/takes/[0-9a-f-]{36}/$",
    ),
}


def _violations(page: Any) -> list[str]:
    """Return axe-core's serious and critical WCAG 2.1 A/AA violations on the page, one line each."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async (tags) => {
            const result = await axe.run(document, {runOnly: {type: "tag", values: tags}});
            return result.violations
                .filter((v) => v.impact === "serious" || v.impact === "critical")
                .map((v) => `${v.impact} ${v.id}: ${v.nodes.length} node(s), e.g. ${v.nodes[0].target.join(" ")}`);
        }""",
        WCAG_21_AA,
    )
    return list(found)


def _first_work_link(page: Any, pattern: str) -> str | None:
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map((a) => a.getAttribute('href'))")
    return next((href for href in hrefs if re.match(pattern, href)), None)


def test_each_roles_main_pages_pass_axe(browser_page: Any, live_server: Any) -> None:
    if not AXE.exists():
        skip_or_fail("axe-core is not installed (make install-dev runs npm ci)")
    call_command("seed_demo", stdout=io.StringIO())
    for user in User.objects.filter(username__in=PAGES):
        user.set_password(TEST_PASSWORD)
        user.save(update_fields=["password"])
    page = browser_page
    problems: list[str] = []
    visited: list[str] = []
    for username, (paths, work_pattern) in PAGES.items():
        log_in(page, live_server, username)
        page.wait_for_load_state("load")
        urls = list(paths)
        for path in paths:
            page.goto(f"{live_server.url}{path}")
            if work_pattern and (link := _first_work_link(page, work_pattern)) and link not in urls:
                urls.append(link)
        for url in urls:
            response = page.goto(f"{live_server.url}{url}")
            assert response is not None and response.status == 200, (username, url)
            page.wait_for_load_state("load")
            visited.append(f"{username} {url}")
            problems += [f"{username} {url}: {line}" for line in _violations(page)]
        page.context.clear_cookies()
    assert len(visited) >= 20, visited
    assert problems == [], "\n".join(problems)
