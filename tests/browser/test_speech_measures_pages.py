"""Real Chromium: an admin reads the objective audio measures beside the judges' Audio on the
leaderboard, a study's clips as heard and at their own level, and a build's speech checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.outputs.models import OutputAudioMetrics, System
from ml.builder.export import export_build
from ml.builder.models import Build, BuildSample
from tests.evaluation.studies.support import build_world, make_study
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from tests.ml.builder.pages.spotcheck_builds import finished_build
from tests.support.browser import log_in

pytestmark = pytest.mark.browser


def test_an_admin_reads_the_speech_measures_where_they_work(
    browser_page, live_server, users, make_user, media_root, tmp_path: Path
) -> None:
    # given a judged and measured system, a study of two systems, and an exported build
    judge = JudgeConfigFactory.create(name="gpt-judge")
    system = System.objects.create(name="EchoChat")
    for score in (4.0, 3.0):
        output = ModelOutputFactory.create(system=system)
        JudgementFactory.create(output=output, stage="response_audio", judge_config=judge, score=score)
        OutputAudioMetrics.objects.create(
            output=output,
            audio_key=output.response_audio_key,
            p808_mos=3.4,
            ovrl_mos=3.0,
            loudness_lufs=-21.5,
            phones_per_second=12.3,
        )
    study = make_study(build_world(make_user, prefix="B"), [users["evaluator"]], users["admin"])
    build = finished_build(single=1, audio=True)
    BuildSample.objects.filter(build=build).update(
        speech={
            "rate_ratio": 1.3,
            "rate_level": "high",
            "stress": {"asked": "x", "detected": ["x"], "agrees": True},
        }
    )
    export_build(build, tmp_path / "export")
    assert json.loads((tmp_path / "export" / "manifest.json").read_text())["speech_checks"]["samples"] == 1
    Build.objects.filter(pk=build.pk).update(export_path=str(tmp_path / "export"))
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_server, "admin")
    page.wait_for_url(f"{live_server.url}/manage/")

    # when the admin opens the leaderboard, the study's clips and the build
    page.goto(f"{live_server.url}/results/leaderboard/?judge={judge.pk}")
    table = page.locator("[data-testid=objective-audio-table]")
    table.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "leaderboard.png"), full_page=True)
    # then each reads as it should
    assert "3.50" in table.locator("tr[data-measured-system=EchoChat]").inner_text()  # the judges' Audio
    assert "12.30" in table.inner_text() and "-21.50" in table.inner_text()
    assert page.locator("[data-testid=objective-audio-scales]").is_visible()

    page.goto(f"{live_server.url}/manage/studies/{study.pk}/clips/")
    page.screenshot(path=str(tmp_path / "clips.png"), full_page=True)
    heard, original = page.locator("[data-testid=heard]"), page.locator("[data-testid=original]")
    assert heard.count() == original.count() > 0

    page.goto(f"{live_server.url}/manage/builds/{build.pk}/")
    checks = page.locator("[data-testid=build-speech-checks]")
    page.screenshot(path=str(tmp_path / "build.png"), full_page=True)
    assert "Asked-for stress heard" in checks.inner_text() and "1 of 1" in checks.inner_text()
    assert errors == []
    print("screenshots in", tmp_path)
