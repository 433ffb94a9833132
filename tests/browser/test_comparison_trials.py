"""Real Chromium: an evaluator answers CMOS and A/B pairs and a MUSHRA trial with sliders, each
answer opening only after every sample has played to the end; the admin reads the figures."""

from __future__ import annotations

import pytest

from evaluation.studies.models import StudyAssignment, StudySlot
from tests.evaluation.studies.comparisons.support import make_comparison
from tests.evaluation.studies.support import build_world, current
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def _play_every_sample(page) -> None:
    """Play each sample in turn (one at a time, as the page allows) until the server opens the answer."""
    count = page.locator("[data-slot]").count()
    assert page.locator("#submit-trial").is_disabled()
    for index in range(count):
        page.evaluate(f"document.querySelectorAll('[data-slot] audio')[{index}].play()")
        page.wait_for_function(
            f"document.querySelectorAll('[data-slot]')[{index}].dataset.played === 'true'", timeout=20_000
        )
        if index < count - 1:
            assert page.get_attribute("#trial", "data-unlocked") == "false"
    page.wait_for_selector("#trial[data-unlocked=true]", timeout=20_000)
    assert not page.locator("#submit-trial").is_disabled()


def _second_is_b(assignment: StudyAssignment) -> bool:
    second = assignment.slots.select_related("part__sample__system").get(position=2)
    system = second.part.sample.system
    return system is not None and system.name == "SecretSystemB"


def _answer_pairs(page, study, rater, choose) -> None:
    total = StudyAssignment.objects.filter(study=study, evaluator=rater).count()
    page.goto(f"{page.url.split('/rate/')[0]}/rate/studies/{study.public_id}/")
    for number in range(1, total + 1):
        page.wait_for_selector(f"[data-testid=progress-text]:has-text('Trial {number} of {total}')")
        assert page.locator("[data-testid=sample] h3").all_inner_texts() == ["A", "B"]
        _play_every_sample(page)
        page.check(f"input[name=score_2][value='{choose(current(study, rater))}']")
        page.click("#submit-trial")
    page.wait_for_selector("[data-testid=study-done]")


def test_an_evaluator_answers_cmos_ab_and_mushra_trials(browser_page, live_server, users, make_user):
    page = browser_page
    rater = users["evaluator"]
    world = build_world(make_user, n_systems=2, n_items=2)
    cmos = make_comparison(
        world,
        [rater],
        users["admin"],
        "ccr",
        reference_system=world.systems[0],
        items_per_system=2,
        name="CMOS",
    )
    ab = make_comparison(world, [rater], users["admin"], "ab", items_per_system=2, name="AB")
    mushra = make_comparison(world, [rater], users["admin"], "mushra", items_per_system=1, name="MUSHRA")

    log_in(page, live_server, "evaluator")
    page.wait_for_selector("text=Start")
    page.goto(f"{live_server.url}/rate/studies/{cmos.public_id}/")
    # B judged 2 better than the reference wherever it was heard (the test knows the order; the page does not).
    _answer_pairs(page, cmos, rater, lambda assignment: "2" if _second_is_b(assignment) else "-2")
    answers = StudySlot.objects.filter(assignment__study=cmos, position=2)
    assert sorted(score or 0 for score in answers.values_list("score", flat=True)) == [
        -2,
        2,
    ]  # both orders were heard
    _answer_pairs(page, ab, rater, lambda assignment: "0")
    assert list(
        StudySlot.objects.filter(assignment__study=ab, position=2).values_list("score", flat=True)
    ) == [0, 0]

    page.goto(f"{live_server.url}/rate/studies/{mushra.public_id}/")
    page.wait_for_selector("[data-testid=trial-page]")
    labels = page.locator("[data-testid=sample] h3").all_inner_texts()
    assert labels == ["Sample 1", "Sample 2", "Sample 3", "Sample 4"]  # system, hidden reference, two anchors
    assert page.locator("[data-testid=slider]").first.is_disabled()
    _play_every_sample(page)  # the open reference, then the four samples
    sliders = page.locator("[data-testid=slider]")
    for index in range(sliders.count()):
        sliders.nth(index).fill(str(20 * (index + 1)))
    assert page.locator("[data-testid=slider-value]").all_inner_texts() == ["20", "40", "60", "80"]
    page.click("#submit-trial")
    page.wait_for_selector("[data-testid=study-done]")
    scores = dict(
        StudySlot.objects.filter(assignment__study=mushra, position__gt=0).values_list("position", "score")
    )
    assert scores == {1: 20, 2: 40, 3: 60, 4: 80}

    page.click("text=Log out")
    log_in(page, live_server, "admin")
    page.wait_for_selector("text=Listening studies")
    page.goto(f"{live_server.url}/manage/studies/{cmos.pk}/")
    assert "+2.00" in page.inner_text("[data-testid=cmos-table]") or "2.00" in page.inner_text(
        "[data-testid=cmos-table]"
    )
    page.wait_for_function("document.getElementById('comparison-chart').dataset.errorBars !== undefined")
    page.goto(f"{live_server.url}/manage/studies/{mushra.pk}/")
    page.wait_for_function("document.getElementById('comparison-chart').dataset.rendered === '4'")
    assert "Hidden reference" in page.inner_text("[data-testid=mushra-table]")
