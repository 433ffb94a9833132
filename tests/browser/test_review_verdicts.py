"""Real Chromium: a reviewer must play the whole take before a verdict, may change it until the take is
decided, and has speed (remembered), zoom, progress and counted queue tabs on the review pages."""

from __future__ import annotations

import uuid

import pytest

from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import submit_verdict
from tests.annotation.recording.support import heard
from tests.factories import ItemFactory, ReviewFactory, TakeFactory
from tests.support.browser import listed_keys, log_in
from webapp.roles import Role

pytestmark = pytest.mark.browser


def take_in_review(external_id: str, actor, reviewers) -> Take:
    item = ItemFactory.create(external_id=external_id, actor=actor, state=Item.State.IN_REVIEW)
    take = TakeFactory.create(item=item, actor=actor, status=Take.Status.IN_REVIEW, duration_seconds=1.5)
    for reviewer in reviewers:
        ReviewFactory.create(take=take, reviewer=reviewer)
    return take


def test_verdict_after_playback_changed_until_decided(
    browser_page, live_server, transactional_db, users, make_user, screenshots
) -> None:
    page = browser_page
    others = [make_user(Role.REVIEWER, name) for name in ("rev2", "rev3")]
    take = take_in_review("EE-0001", users["actor"], [users["reviewer"], *others])
    take_in_review("EE-0002", users["actor"], [users["reviewer"]])
    mine = take.reviews.get(reviewer=users["reviewer"])
    # The queue is a stable shuffle by public id; put EE-0001's review first so the walk is known.
    Review.objects.filter(pk=mine.pk).update(public_id=uuid.UUID(int=0))
    mine.refresh_from_db()

    log_in(page, live_server, "reviewer", start="/accounts/login/?next=/review/")
    page.wait_for_url(f"{live_server.url}/review/")
    assert page.locator("[data-testid=count-to_review]").inner_text() == "2"
    assert page.locator("[data-testid=count-changeable]").inner_text() == "0"

    page.click("#start-reviewing")
    page.wait_for_url(f"{live_server.url}/review/{mine.public_id}/")
    page.wait_for_selector("#waveform[data-ready=true]")
    assert page.locator("[data-testid=progress]").inner_text() == "1 of 2"
    assert page.locator("#accept").is_disabled()
    assert "Play the whole take once" in page.locator("[data-testid=playback-status]").inner_text()
    assert listed_keys(page) == ["Space", "+ −, wheel", "[ ]", "a", "r", "1 – 6", "Enter", "Esc"]

    # Speed and zoom as in the workbench; the speed is remembered for the next page.
    page.select_option("[data-testid=speed]", "1.5")
    page.keyboard.press("+")
    page.wait_for_function("() => document.querySelector('#waveform').dataset.zoom !== '0'")
    page.screenshot(path=str(screenshots / "review-locked.png"), full_page=True)

    page.click("#play-toggle")
    page.wait_for_selector("#play-toggle[aria-pressed=true]")  # the button says it is playing
    page.wait_for_selector("#review[data-unlocked=true]")
    assert page.locator("#accept").is_enabled()
    page.keyboard.press("a")
    following = Review.objects.get(take__item__external_id="EE-0002")
    page.wait_for_url(f"{live_server.url}/review/{following.public_id}/")
    assert Review.objects.get(pk=mine.pk).verdict == Review.Verdict.ACCEPT
    page.wait_for_selector("#waveform[data-ready=true]")
    assert page.locator("[data-testid=speed]").input_value() == "1.5"
    assert page.locator("[data-testid=progress]").inner_text() == "2 of 2"

    # Second thoughts: the verdict is still open while the other reviewers have not spoken.
    page.goto(f"{live_server.url}/review/?tab=changeable")
    assert page.locator("[data-testid=count-changeable]").inner_text() == "1"
    page.click("[data-testid=review-list] >> text=EE-0001")
    page.wait_for_selector("[data-testid=verdict-given]")
    assert page.locator("#review").get_attribute("data-unlocked") == "true"
    page.keyboard.press("r")
    page.keyboard.press("1")
    page.screenshot(path=str(screenshots / "review-change.png"), full_page=True)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/review/{following.public_id}/")
    mine.refresh_from_db()
    assert (mine.verdict, mine.reasons) == (Review.Verdict.REJECT, ["wrong_emotion"])

    # The others decide the take: from then on the verdict is final.
    heard(take)
    for review in take.reviews.exclude(pk=mine.pk):
        submit_verdict(review.pk, review.reviewer, "accept")
    page.goto(f"{live_server.url}/review/{mine.public_id}/")
    assert "verdicts are final" in page.locator("[data-testid=review-closed]").inner_text()
    assert page.locator("#verdict-form").count() == 0
    assert listed_keys(page) == ["Space", "+ −, wheel", "[ ]", "Esc"]  # no verdict keys without a verdict
