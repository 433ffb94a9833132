"""Real Chromium: an admin sorts and filters every output's measures (reply WER, speaker
similarity beside DNSMOS) and reads each system's means with intervals on the leaderboard."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.outputs.models import OutputAudioMetrics, System
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def test_an_admin_sorts_and_filters_the_output_measures(
    browser_page, live_server, users, tmp_path: Path
) -> None:
    # given two measured systems
    judge = JudgeConfigFactory.create(name="gpt-judge")
    for name, wers, similarities in (
        ("EchoChat", (0.12, 0.3, 0.2), (0.91, 0.85, 0.88)),
        ("Parrot", (0.8, 0.95), (0.6, 0.55)),
    ):
        system = System.objects.create(name=name)
        for wer, alike in zip(wers, similarities, strict=True):
            output = ModelOutputFactory.create(system=system)
            JudgementFactory.create(output=output, stage="response_audio", judge_config=judge, score=3.0)
            OutputAudioMetrics.objects.create(
                output=output,
                audio_key=output.response_audio_key,
                p808_mos=3.2,
                loudness_lufs=-21.0,
                reply_wer=wer,
                speaker_similarity=alike,
            )
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_server, "admin")
    page.wait_for_url(f"{live_server.url}/manage/")

    # when the admin sorts by WER, highest first, then keeps replies with WER of at most 0.5
    page.goto(f"{live_server.url}/results/outputs/")
    page.select_option("#id_sort", "-reply_wer")
    page.click("[data-testid=output-filter] button")
    rows = page.locator("[data-testid=output-measures-table] tbody tr")
    assert rows.first.get_attribute("data-system") == "Parrot"
    assert "0.95" in rows.first.inner_text()
    page.select_option("#id_metric", "reply_wer")
    page.fill("#id_high", "0.5")
    page.click("[data-testid=output-filter] button")
    page.screenshot(path=str(tmp_path / "output-measures.png"), full_page=True)
    assert [rows.nth(i).get_attribute("data-system") for i in range(rows.count())] == ["EchoChat"] * 3
    # a column head sorts too
    page.click("a[data-sort=speaker_similarity]")
    assert "0.85" in rows.first.inner_text()

    # and the leaderboard shows each system's mean WER with its interval and n
    page.goto(f"{live_server.url}/results/leaderboard/?judge={judge.pk}")
    row = page.locator("[data-testid=objective-audio-table] tr[data-measured-system=EchoChat]")
    row.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "leaderboard-measures.png"), full_page=True)
    assert "0.21" in row.inner_text() and "n=3" in row.inner_text() and "[" in row.inner_text()
    assert errors == []
    print("screenshots in", tmp_path)
