"""Real Chromium under the Content-Security-Policy: every role's main pages run with no violation
reported and no script error (no inline script, no eval, audio and waveforms from this site)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.urls import reverse

from tests.factories import AnnotationFactory, ItemFactory, JudgementFactory, ReviewFactory
from tests.support.browser import log_in
from webapp.models import User

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("media_root")]

RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__csp.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"} at ${event.sourceFile}:${event.lineNumber}`);
});
"""


@pytest.fixture
def enforcing_page(open_browser_page: Callable[..., AbstractContextManager[Any]]) -> Iterator[Any]:
    """A page that obeys the site's policy (other browser tests bypass it for wait_for_function)."""
    with open_browser_page(bypass_csp=False) as page:
        yield page


def _pages(users: dict[str, User]) -> dict[str, list[str]]:
    item = ItemFactory.create(actor=users["actor"])
    review = ReviewFactory.create(reviewer=users["reviewer"])
    annotation = AnnotationFactory.create(annotator=users["annotator"])
    judgement = JudgementFactory.create(score=7.0)
    judge = judgement.judge_config
    return {
        "actor": [
            reverse("annotation:actor_queue"),
            reverse("annotation:record_item", args=[item.external_id]),
        ],
        "reviewer": [
            reverse("annotation:review_queue"),
            reverse("annotation:review_take", args=[review.public_id]),
        ],
        "annotator": [
            reverse("annotation:annotator_queue"),
            reverse("annotation:workbench", args=[annotation.pk]),
        ],
        "lead": [reverse("annotation:adjudication_queue"), reverse("annotation:agreement")],
        "evaluator": [reverse("evaluation:evaluator_queue")],
        "admin": [
            reverse("annotation:admin_dashboard"),
            reverse("annotation:recording_dashboard"),
            reverse("job_list"),
            f"{reverse('evaluation:leaderboard')}?version={judgement.output.benchmark_version}&judge={judge.pk}",
            reverse("evaluation:judge_config_create"),
            reverse("ml:training"),
            reverse("admin:index"),
            reverse("admin:webapp_user_change", args=[users["annotator"].pk]),
        ],
    }


def test_main_pages_of_every_role_run_under_the_policy(
    enforcing_page: Any, live_server: Any, users: dict[str, User]
) -> None:
    page = enforcing_page
    pages = _pages(users)
    problems: list[str] = []
    page.add_init_script(RECORD_VIOLATIONS)
    page.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}") if "Content Security Policy" in message.text else None
        ),
    )
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    for username, paths in pages.items():
        log_in(page, live_server, username, start="/")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        for path in paths:
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None and response.status == 200, (username, path)
            assert "script-src 'self'" in response.headers["content-security-policy"]
            page.wait_for_load_state("networkidle")
            problems += [f"{username} {path}: {v}" for v in page.evaluate("window.__csp")]
        if username == "lead":
            # The agreement filter applies on change from a script, not an inline onchange.
            option = page.locator("[data-testid=scenario-filter] option").nth(1).get_attribute("value")
            page.select_option("[data-testid=scenario-filter]", option)
            page.wait_for_url(f"**scenario={option}")
            problems += [f"lead filter: {v}" for v in page.evaluate("window.__csp")]
        page.click("text=Log out")
        page.wait_for_url(f"{live_server.url}/accounts/login/")
    assert problems == []


def test_an_injected_inline_script_is_blocked(
    enforcing_page: Any, live_server: Any, users: dict[str, User]
) -> None:
    # The policy itself, not only our templates: a script smuggled into a page does not run.
    page = enforcing_page
    page.add_init_script(RECORD_VIOLATIONS)
    log_in(page, live_server, "annotator")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    page.evaluate(
        """() => { const s = document.createElement("script"); s.textContent = "window.__ran = true";
        document.body.appendChild(s); const b = document.createElement("button");
        b.setAttribute("onclick", "window.__clicked = true"); document.body.appendChild(b); b.click(); }"""
    )
    assert page.evaluate("window.__ran === undefined && window.__clicked === undefined")
    assert any("script-src" in violation for violation in page.evaluate("window.__csp"))
