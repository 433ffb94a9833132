"""Real Chromium: an evaluator scores rubric outputs by hand with the keyboard, sees "1 of 4" and the
gold reference as labelled fields (never raw JSON)."""

from __future__ import annotations

import pytest

from evaluation.judging.human_scoring import draw_rubric_sample
from evaluation.judging.models import HumanJudgement
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import ModelOutputFactory
from tests.support.browser import listed_keys, log_in

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("media_root")]


def test_rubric_scoring_by_keyboard(browser_page, live_server, transactional_db, users, screenshots) -> None:
    page = browser_page
    first = System.objects.create(name="Hidden-A", text_only=True)
    second = System.objects.create(name="Hidden-B", text_only=True)
    for number in range(2):
        item = BenchmarkItemFactory.create(external_id=f"EE-{number}")
        ModelOutputFactory.create(system=first, item=item)
        ModelOutputFactory.create(system=second, item=item)
    sample = draw_rubric_sample(
        name="pilot", benchmark_version="echoeval-v1", n_items=2, evaluators=[users["evaluator"]], seed=1
    )
    entry = sample.entries.select_related("output").get(position=0)

    log_in(page, live_server, "evaluator", start="/accounts/login/?next=/rate/rubric/")
    page.wait_for_url(f"{live_server.url}/rate/rubric/")
    page.click("text=Start")
    page.wait_for_selector("#rubric-form")
    assert page.locator("[data-testid=progress]").inner_text() == "1 of 4"
    gold = page.locator("[data-testid=gold-fields]").inner_text()
    assert "Primary emotion" in gold and "Latent need" in gold
    assert "{" not in gold and '"perception": {' not in page.content()

    lines = page.locator("[data-subscore]")
    count = lines.count()
    assert count > 3
    # Enter before everything is scored: told what is missing, nothing saved.
    page.locator("h2").first.click()
    page.keyboard.press("Enter")
    assert "Score every sub-score first" in page.locator("[data-testid=rubric-hint]").inner_text()
    # Digits score the highlighted line and arrows move, as the hint says: digit-then-down fills
    # every line in order (a digit that also moved on skipped every other line).
    for index in range(count):
        page.keyboard.press("1")
        assert lines.nth(index).locator("input[type=radio]:checked").count() == 1
        assert page.locator("#rubric-form input[type=radio]:checked").count() == index + 1
        page.keyboard.press("ArrowDown")
    assert listed_keys(page) == ["0 – 6", "↑ ↓", "Enter", "Esc"]
    page.keyboard.press("ArrowUp")
    page.keyboard.press("0")  # the line above the last one now reads 0
    page.screenshot(path=str(screenshots / "rubric.png"), full_page=True)
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('[data-testid=progress]').textContent === '2 of 4'")

    scored = HumanJudgement.objects.filter(output=entry.output, evaluator=users["evaluator"])
    assert scored.count() >= 3
    zeros = [name for judgement in scored for name, value in judgement.subscores.items() if value == 0]
    assert len(zeros) == 1
