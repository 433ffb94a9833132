"""Real Chromium: an evaluator rates a short study by keyboard, trap included; the admin reads the results."""

from __future__ import annotations

import pytest

from evaluation.studies.models import StudyRating
from tests.evaluation.studies.support import build_world, current, from_system, make_study, rate_everything
from tests.support.browser import listed_keys, log_in, wait_for_keys
from webapp.roles import Role

pytestmark = pytest.mark.browser


def test_an_evaluator_rates_by_keyboard_and_the_admin_sees_table_and_chart(
    browser_page, live_server, users, make_user
):
    page = browser_page
    rater, colleague = users["evaluator"], make_user(Role.EVALUATOR)
    world = build_world(make_user, n_systems=2, n_items=3)
    study = make_study(
        world,
        [rater, colleague],
        users["admin"],
        items_per_system=2,
        ratings_per_output=2,
        dimensions=["content_helpfulness", "naturalness"],
        training_count=1,
        trap_count=1,
    )

    log_in(page, live_server, "evaluator")
    page.click("text=Start")
    total = study.assignments.filter(evaluator=rater).count()
    seen_trap = False
    for number in range(1, total + 1):
        page.wait_for_selector(f"[data-testid=progress-text]:has-text('Sample {number} of {total}')")
        wait_for_keys(page)
        assert page.locator("#submit-rating").is_disabled()
        if number == 1:  # Q is listed only where the user's query has audio
            keys = [key for key in listed_keys(page) if key != "Q"]
            assert keys == ["Space", "1 – 5", "↑ ↓", "Enter", "Esc"]
        stimulus = current(study, rater).stimulus
        page.keyboard.press("1")  # locked: nothing may be chosen before the reply has played
        assert page.locator("#rating-controls input:checked").count() == 0
        page.keyboard.press(" ")
        # unlocks only after the audio really ended and the server accepted the playback
        page.wait_for_selector("#rating[data-unlocked=true]", timeout=20_000)
        assert page.evaluate("document.getElementById('response-audio').ended")
        if stimulus.kind == "trap":
            seen_trap = True
            assert "Please select score 2" in page.inner_text("[data-testid=response-text]")
            scores = ["2", "2"]
        else:
            scores = ["4", "5"] if from_system(stimulus, "A") else ["2", "3"]
        # As the hint says: a digit scores the highlighted question, the down arrow moves on.
        for score in scores:
            page.keyboard.press(score)
            page.keyboard.press("ArrowDown")
        chosen = page.locator("#rating-controls .question input:checked")
        assert [chosen.nth(i).get_attribute("value") for i in range(chosen.count())] == scores
        page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=study-done]")
    assert seen_trap
    assert StudyRating.objects.filter(assignment__evaluator=rater).count() == 2 * total
    trap_scores = StudyRating.objects.filter(assignment__evaluator=rater, assignment__stimulus__kind="trap")
    assert set(trap_scores.values_list("score", flat=True)) == {2}

    rate_everything(study, colleague, lambda a, d: 2 if a.stimulus.kind == "trap" else 4)
    page.click("text=Log out")
    log_in(page, live_server, "admin")
    page.click("text=Listening studies")
    page.click(f"text={study.name}")
    table = page.locator("[data-testid=mos-table]")
    assert "SecretSystemA" in table.inner_text() and "SecretSystemB" in table.inner_text()
    assert "n = 2/2 outputs · 4 ratings" in table.inner_text()
    chart = page.locator("[data-testid=mos-chart]")
    page.wait_for_function("document.getElementById('mos-chart').dataset.errorBars !== undefined")
    assert chart.get_attribute("data-rendered") == "2"
    assert chart.get_attribute("data-y-min") == "0"  # a mean of 1.00 still shows as a bar
    assert int(chart.get_attribute("data-error-bars")) == 4  # 2 systems x 2 dimensions
    screening = page.locator("[data-testid=screening] tr[data-rater=evaluator]").inner_text()
    assert "0 of 1" in screening  # the trap was passed
