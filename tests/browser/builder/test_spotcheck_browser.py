"""Real Chromium: an annotator works through a build's spot-check queue (keep one, drop one with a
reason, fix one), and the admin's build page then shows the acceptance per stage and its chart."""

from __future__ import annotations

from typing import Any

import pytest

from ml.builder.models import SpotCheck
from ml.builder.pages.queue import draw_spot_checks
from tests.ml.builder.pages.spotcheck_builds import finished_build
from tests.support.browser import listed_keys, log_in

pytestmark = pytest.mark.browser


def _play_to_the_end(page: Any) -> None:
    """Play the sample's audio (the query, then the response) to the end at twice the speed: the
    server takes a decision only once it has sent all of it, long enough ago."""
    page.locator("h1").click()  # a user gesture, which the autoplay rules ask of play()
    for player in ("user-audio", "response-audio"):
        page.evaluate(
            """async (selector) => {
                const audio = document.querySelector(selector);
                audio.playbackRate = 2;
                const ended = new Promise((done) => audio.addEventListener("ended", done, { once: true }));
                await audio.play();
                await ended;
            }""",
            f"[data-testid={player}]",
        )


def _times_said(page: Any, words: str) -> int:
    """Return how often the page's visible text says `words` (the errors box, messages, anywhere)."""
    return page.locator("body").inner_text().lower().count(words)


def test_annotator_spot_checks_and_the_build_page_shows_acceptance(
    open_browser_page, live_server, transactional_db, users, media_root, screenshots
) -> None:
    build = finished_build(name="Browser build", single=3, audio=True)
    draw_spot_checks(build, count=3)

    with open_browser_page() as page:
        log_in(page, live_server, "annotator", start="/accounts/login/?next=/spot-checks/")
        page.wait_for_url(f"{live_server.url}/spot-checks/")
        assert page.locator("[data-testid=waiting-count]").inner_text() == "3"
        page.click(f"[data-testid=start-{build.pk}]")

        # keep the first, after listening: the signed audio link plays for this annotator
        page.wait_for_selector("[data-testid=decision-form]")
        assert listed_keys(page) == ["Esc"]  # the page's one key (it leaves a text box or list)
        page.check("input[name=verdict][value=keep]")
        page.click("[data-testid=submit-decision]")  # before listening: refused, with the reason
        refusal = page.locator("[data-testid=decision-errors]").inner_text()
        assert "Play the user's audio first: the server has not sent you its audio." in refusal
        src = page.locator("[data-testid=user-audio]").get_attribute("src")
        assert page.evaluate("async (src) => (await fetch(src)).status", src) == 200
        assert "I really thought" in page.locator("[data-testid=user-text]").inner_text()
        assert "sad" in page.locator("[data-testid=auto-perception]").inner_text()
        page.screenshot(path=str(screenshots / "spot-check.png"), full_page=True)
        _play_to_the_end(page)
        page.check("input[name=verdict][value=keep]")
        page.click("[data-testid=submit-decision]")

        # drop the second: the emotion is not audible (a drop without a reason is refused first, once)
        page.wait_for_selector("text=: keep.")
        _play_to_the_end(page)
        page.check("input[name=verdict][value=drop]")
        page.click("[data-testid=submit-decision]")
        page.wait_for_selector("[data-testid=decision-errors]")
        assert _times_said(page, "at least one reason") == 1
        page.screenshot(path=str(screenshots / "spot-check-drop-refused.png"), full_page=True)
        page.check("input[name=verdict][value=drop]")
        page.check("input[name=reasons][value=audio_wrong_emotion]")
        page.fill("textarea[name=note]", "sounds cheerful, not sad")
        page.click("[data-testid=submit-decision]")

        # fix the third: a drop without a reason is refused first, then the intensity is corrected
        page.wait_for_selector("text=: drop.")
        _play_to_the_end(page)
        page.check("input[name=verdict][value=fix]")
        page.click("[data-testid=submit-decision]")
        assert "at least one reason" in page.locator("[data-testid=decision-errors]").inner_text()
        assert _times_said(page, "at least one reason") == 1
        page.check("input[name=verdict][value=fix]")
        page.check("input[name=reasons][value=perception_wrong]")
        # choosing Fix (and a refused fix coming back) opens the fields it edits
        assert page.locator("[data-testid=fix-fields]").evaluate("details => details.open")
        page.select_option("select[name=perception_intensity]", "high")
        page.fill("textarea[name=response]", "That sounds painful; it makes sense you feel let down.")
        page.screenshot(path=str(screenshots / "spot-check-fix.png"), full_page=True)
        page.click("[data-testid=submit-decision]")
        page.wait_for_url(f"{live_server.url}/spot-checks/")
        assert "Nothing waiting." in page.locator("[data-testid=waiting]").inner_text()
        assert page.locator("[data-testid=decided] tbody tr").count() == 3
        page.screenshot(path=str(screenshots / "spot-check-queue.png"), full_page=True)

    checks = {check.verdict: check for check in SpotCheck.objects.filter(build=build)}
    assert set(checks) == {"keep", "drop", "fix"}
    assert (checks["drop"].stage, checks["drop"].reasons) == ("consistency", ["audio_wrong_emotion"])
    assert checks["fix"].stage == "perception" and checks["fix"].perception["intensity"] == "high"

    with open_browser_page() as page:
        log_in(page, live_server, "admin", start=f"/accounts/login/?next=/manage/builds/{build.pk}/")
        page.wait_for_url(f"{live_server.url}/manage/builds/{build.pk}/")
        page.wait_for_selector("#acceptance-chart[data-whiskers]")
        consistency = page.locator("tr[data-stage=consistency] [data-testid=acceptance]").inner_text()
        assert consistency.startswith("2 of 3 · 67%")
        assert (
            page.locator("tr[data-stage=perception] [data-testid=acceptance]")
            .inner_text()
            .startswith("2 of 3")
        )
        assert (
            page.locator("tr[data-stage=queries] [data-testid=acceptance]").inner_text().startswith("3 of 3")
        )
        assert page.locator("[data-testid=overall-acceptance]").inner_text() == "33%"
        # one bar per stage the checked samples went through: all but dialogue trajectories
        assert page.locator("#acceptance-chart").get_attribute("data-rendered") == "8"
        page.screenshot(path=str(screenshots / "build-page.png"), full_page=True)
