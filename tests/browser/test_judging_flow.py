"""Real Chromium: an admin imports outputs, judges them against a local judge, and reads the leaderboard."""

from __future__ import annotations

import pytest

from tests.evaluation.judging_support import BenchmarkItemFactory, echochat_text, jsonl, rubric_judge, zip_of
from tests.factories import tiny_wav
from tests.support.browser import log_in
from tests.support.fake_chat_server import running_chat_server

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.usefixtures("media_root")]


def test_admin_imports_judges_and_opens_the_leaderboard(
    browser_page, live_server, users, worker_factory, settings
) -> None:
    page = browser_page
    for number, scenario in enumerate(("implicit", "modality-conflict", "emotion-shift")):
        BenchmarkItemFactory.create(external_id=f"EE-{number}", scenario=scenario)
    rows = jsonl(*({"item_id": f"EE-{number}", "output": echochat_text()} for number in range(3)))
    audio = zip_of({f"EE-{number}.wav": tiny_wav(frequency=200 + 50 * number) for number in range(3)})
    worker = worker_factory(ECHOSTUDIO_MEDIA_ROOT=settings.STORAGES["default"]["OPTIONS"]["location"])

    with running_chat_server(rubric_judge()) as judge:
        log_in(page, live_server, "admin", start="/")
        page.click("text=Systems and outputs")

        # register the system and import its outputs
        page.click("text=Register a system")
        page.fill("input[name=name]", "Omni-X")
        page.select_option("select[name=category]", "omni")
        page.click("button:has-text('Save')")
        page.set_input_files(
            "input[name=rows]", {"name": "outputs.jsonl", "mimeType": "application/json", "buffer": rows}
        )
        page.set_input_files(
            "input[name=audio_zip]", {"name": "audio.zip", "mimeType": "application/zip", "buffer": audio}
        )
        page.click("button:has-text('Validate and import')")
        assert page.locator("#import-report").get_attribute("data-imported") == "yes"
        assert "3 new" in page.locator("#import-report").inner_text()

        # point a judge configuration at the local judge
        page.click("nav.results-nav >> text=Judges")
        page.click("text=New judge configuration")
        page.fill("input[name=name]", "local judge")
        page.fill("input[name=base_url]", judge.base_url)
        page.fill("input[name=model]", "judge-model")
        page.check("input[name=attach_audio]")
        page.click("button:has-text('Save')")

        # start the run and watch the progress bar finish
        page.click("nav.results-nav >> text=Judge runs")
        page.select_option("select[name=system]", label="Omni-X")
        page.select_option("select[name=judge_config]", label="local judge")
        page.click("button:has-text('Start judging')")
        page.wait_for_selector(".job[data-status=succeeded]", timeout=90_000)
        assert page.locator("[role=progressbar]").get_attribute("aria-valuenow") == "100", worker.log_text()
        page.wait_for_selector("#run-counts:not([hx-get])", timeout=10_000)
        assert page.locator("[data-testid=valid-count]").inner_text() == "12"

        # open the leaderboard
        page.click("[data-testid=leaderboard-link]")
        row = page.locator("#leaderboard tr[data-system='Omni-X']")
        cells = row.locator("td").all_inner_texts()
    # implicit and conflict perception 8, shift 7; reasoning 8; content 4 + audio 5 = 9; All = (7.67 + 8 + 9) / 3;
    # under each figure n/N, the valid judgements of those expected (one item per scenario answered)
    assert cells == [
        "Omni-X",
        "8.00\n1/1",
        "-\n0/0",
        "8.00\n1/1",
        "-\n0/0",
        "7.00\n1/1",
        "7.67\n3/3",
        "8.00\n3/3",
        "4.00\n3/3",
        "5.00\n3/3",
        "9.00\n6/6",
        "8.22\n12/12",
        "0",
    ]
    assert len(judge.chat_requests) == 12
    assert page.locator("#leaderboard-chart-canvas").is_visible()
