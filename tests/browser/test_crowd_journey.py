"""Real Chromium: crowd raters arrive from a Prolific-style URL. One is screened, practises, rates
every trial and is sent back with the completion code; one fails the headphone screen and is sent
back with the screened-out code having rated nothing; one closes the tab and resumes. Another does
a CMOS study and an A/B study: screens, a practice trial, every trial heard in full, codes."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest

from evaluation.studies.crowd.models import CrowdLink, CrowdRater, CrowdScreening
from evaluation.studies.crowd.platforms import Platform
from evaluation.studies.crowd.workflows import digit_triplets, headphone_trials, open_to_crowd
from evaluation.studies.models import StudyAssignment, StudyRating, StudySlot
from tests.evaluation.studies.comparisons.support import make_comparison
from tests.evaluation.studies.crowd.support import crowd_study, prolific_query
from tests.evaluation.studies.support import build_world
from tests.support.browser import wait_for_keys
from webapp.roles import Role

pytestmark = pytest.mark.browser

PROLIFIC = "https://app.prolific.com/**"


def _open(page: Any, live_server: Any, link: CrowdLink, pid: str) -> None:
    page.goto(f"{live_server.url}/crowd/{link.token}/?{urlencode(prolific_query(pid))}")


def _screening(link: CrowdLink, pid: str, test: str) -> CrowdScreening:
    return CrowdScreening.objects.get(
        rater__link=link, rater__external_id=pid, test=test, finished_at__isnull=True
    )


def _consent_and_screens(page: Any, link: CrowdLink, pid: str, headphones_right: bool = True) -> None:
    page.click("[data-testid=consent-agree]")
    page.wait_for_selector("[data-testid=crowd-headphones]")
    assert page.locator("[data-testid=headphone-trial] audio").count() == 6
    for number, trial in enumerate(headphone_trials(_screening(link, pid, "headphones")), start=1):
        answer = trial.answer if headphones_right else trial.answer % 3 + 1
        page.check(f"input[name=trial_{number}][value='{answer}']")
    page.click("[data-testid=screen-submit]")
    if not headphones_right:
        return
    page.wait_for_selector("[data-testid=crowd-digits]")
    for number, triplet in enumerate(digit_triplets(_screening(link, pid, "digits")), start=1):
        page.fill(f"input[name=trial_{number}]", " ".join(triplet.answer))
    page.click("[data-testid=screen-submit]")


def _rate_one(page: Any, link: CrowdLink, pid: str, number: int, total: int) -> str:
    page.wait_for_selector(f"[data-testid=progress-text]:has-text('Sample {number} of {total}')")
    seat = CrowdRater.objects.get(link=link, external_id=pid).seat
    assert seat is not None
    assignment = StudyAssignment.objects.next_for(link.study, seat.user)
    assert assignment is not None
    assert page.locator("#submit-rating").is_disabled()
    wait_for_keys(page)
    page.keyboard.press(" ")  # the reply's, whichever player has focus (test_rating_space_focus)
    page.wait_for_selector("#rating[data-unlocked=true]", timeout=60_000)  # a loaded CI machine
    page.keyboard.press("2" if assignment.stimulus.kind == "trap" else "4")
    page.keyboard.press("Enter")
    return str(assignment.stimulus.kind)


def _total(link: CrowdLink, pid: str) -> int:
    seat = CrowdRater.objects.get(link=link, external_id=pid).seat
    assert seat is not None
    return StudyAssignment.objects.filter(evaluator=seat.user).count()


def test_crowd_raters_journeys_from_a_prolific_url(browser_page, live_server, make_user, users):
    page = browser_page
    link = crowd_study(make_user, users["admin"], seats=2)
    page.context.route(
        PROLIFIC,
        lambda route: route.fulfill(body="<p id=back>Back on Prolific</p>", content_type="text/html"),
    )

    # The first rater: consent, both checks, practice first, every trial, code and redirect.
    _open(page, live_server, link, "rater0one")
    page.wait_for_selector("[data-testid=crowd-consent]")
    _consent_and_screens(page, link, "rater0one")
    total = _total(link, "rater0one")
    page.wait_for_selector("[data-testid=practice]")
    kinds = [_rate_one(page, link, "rater0one", number, total) for number in range(1, total + 1)]
    assert kinds[0] == "training" and "trap" in kinds
    page.wait_for_selector("[data-testid=crowd-done]")
    assert page.inner_text("[data-testid=completion-code]") == link.completion_code
    page.wait_for_url(
        f"https://app.prolific.com/submissions/complete?cc={link.completion_code}", timeout=15_000
    )
    assert (
        StudyRating.objects.filter(assignment__evaluator__crowd_seat__rater__external_id="rater0one").count()
        == total
    )

    # The second fails the headphone screen: the screened-out code, back to Prolific, nothing rated.
    second = page.context.browser.new_context(bypass_csp=True)
    second.route(PROLIFIC, lambda route: route.fulfill(body="<p>Back</p>", content_type="text/html"))
    failing = second.new_page()
    _open(failing, live_server, link, "rater0two")
    _consent_and_screens(failing, link, "rater0two", headphones_right=False)
    failing.wait_for_selector("[data-testid=crowd-screened-out]")
    assert failing.inner_text("[data-testid=completion-code]") == link.screened_out_code
    failing.wait_for_url(
        f"https://app.prolific.com/submissions/complete?cc={link.screened_out_code}", timeout=15_000
    )
    rater = CrowdRater.objects.get(link=link, external_id="rater0two")
    assert (
        rater.seat is None
        and not StudyRating.objects.filter(assignment__evaluator__crowd_seat__rater=rater).exists()
    )
    second.close()

    # The third closes the tab after one sample and, reopening the Prolific link, resumes at the second.
    third = page.context.browser.new_context(bypass_csp=True)
    tab = third.new_page()
    _open(tab, live_server, link, "rater0three")
    _consent_and_screens(tab, link, "rater0three")
    total = _total(link, "rater0three")
    _rate_one(tab, link, "rater0three", 1, total)
    tab.wait_for_selector(f"[data-testid=progress-text]:has-text('Sample 2 of {total}')")
    tab.close()
    reopened = third.new_page()
    _open(reopened, live_server, link, "rater0three")
    reopened.wait_for_selector(f"[data-testid=progress-text]:has-text('Sample 2 of {total}')")
    _rate_one(reopened, link, "rater0three", 2, total)
    assert CrowdRater.objects.filter(link=link, external_id="rater0three").count() == 1
    third.close()


def _answer_trials(page: Any, link: CrowdLink, pid: str, choose: str) -> list[str]:
    """Play every sample of each trial through the page's players, choose `choose`, submit; return
    the kinds of the trials answered."""
    total = _total(link, pid)
    kinds = []
    for number in range(1, total + 1):
        page.wait_for_selector(f"[data-testid=progress-text]:has-text('Trial {number} of {total}')")
        seat = CrowdRater.objects.get(link=link, external_id=pid).seat
        assert seat is not None
        assignment = StudyAssignment.objects.next_for(link.study, seat.user)
        assert assignment is not None
        kinds.append(str(assignment.stimulus.kind))
        assert page.locator("[data-testid=sample] h3").all_inner_texts() == ["A", "B"]
        count = page.locator("[data-slot]").count()
        assert page.locator("#submit-trial").is_disabled()
        for index in range(count):
            page.evaluate(f"document.querySelectorAll('[data-slot] audio')[{index}].play()")
            page.wait_for_function(
                f"document.querySelectorAll('[data-slot]')[{index}].dataset.played === 'true'", timeout=20_000
            )
        page.wait_for_selector("#trial[data-unlocked=true]", timeout=20_000)
        page.check(f"input[name=score_2][value='{choose}']")
        page.click("#submit-trial")
    return kinds


def test_a_crowd_rater_does_cmos_and_ab_trials(browser_page, live_server, make_user, users):
    page = browser_page
    page.context.route(
        PROLIFIC,
        lambda route: route.fulfill(body="<p id=back>Back on Prolific</p>", content_type="text/html"),
    )
    world = build_world(make_user, n_systems=2, n_items=3, prefix="CWB")
    evaluator = make_user(Role.EVALUATOR)
    studies = {
        "cmos": make_comparison(
            world,
            [evaluator],
            users["admin"],
            "ccr",
            reference_system=world.systems[0],
            items_per_system=1,
            training_count=1,
            name="CMOS",
        ),
        "ab": make_comparison(
            world, [evaluator], users["admin"], "ab", items_per_system=1, training_count=1, name="AB"
        ),
    }
    for kind, choose in (("cmos", "2"), ("ab", "1")):
        link = open_to_crowd(studies[kind], 1, Platform.PROLIFIC)
        _open(page, live_server, link, "pairs0one")
        page.wait_for_selector("[data-testid=crowd-consent]")
        _consent_and_screens(page, link, "pairs0one")
        page.wait_for_selector("[data-testid=practice]")
        kinds = _answer_trials(page, link, "pairs0one", choose)
        assert kinds[0] == "training" and "rated" in kinds
        page.wait_for_selector("[data-testid=crowd-done]")
        assert page.inner_text("[data-testid=completion-code]") == link.completion_code
        page.wait_for_url(
            f"https://app.prolific.com/submissions/complete?cc={link.completion_code}", timeout=15_000
        )
        answers = StudySlot.objects.filter(
            assignment__study=link.study, assignment__evaluator__crowd_seat__rater__external_id="pairs0one"
        ).exclude(score=None)
        assert sorted(answers.values_list("position", "score")) == [(2, int(choose))] * len(kinds)
