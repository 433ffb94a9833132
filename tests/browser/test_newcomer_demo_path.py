"""Real Chromium: a newcomer on the seeded demo, without editing anything in the studio, judges with
the offline demo judge and reads the leaderboard, runs an audio MOS study that an evaluator rates,
and starts SFT on the train split."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command

from evaluation.judging.heuristic import DEMO_JUDGE_NAME
from evaluation.studies.models import Study, StudyRating
from ml.jobs.launch import SFT_JOB
from ml.jobs.models import DatasetSnapshot
from tests.factories import TEST_PASSWORD
from tests.support.browser import log_in, wait_for_keys
from webapp.models import Job, JobStatus, User

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.usefixtures("media_root")]

AUDIO_DIMENSIONS = {"naturalness", "prosody", "emotional_alignment"}


def _seed_demo_with_known_passwords(*usernames: str) -> None:
    call_command("seed_demo", stdout=io.StringIO())
    for user in User.objects.filter(username__in=usernames):
        user.set_password(TEST_PASSWORD)  # the seed prints random ones; the test cannot read them
        user.save(update_fields=["password"])


def _log_out(page: Any) -> None:
    page.click("button:has-text('Log out')")
    page.wait_for_selector("input[name=username]")


def test_a_newcomer_judges_rates_and_trains_on_the_demo(
    browser_page: Any, live_server: Any, worker_factory: Any, settings: Any
) -> None:
    page = browser_page
    _seed_demo_with_known_passwords("admin", "evaluator1")
    worker = worker_factory(ECHOSTUDIO_MEDIA_ROOT=settings.STORAGES["default"]["OPTIONS"]["location"])

    # Landing -> judge runs: the demo judge and the first demo system are chosen already.
    log_in(page, live_server, "admin", start="/")
    page.click("#admin-links >> text=judge runs")
    assert page.locator("select[name=judge_config] option:checked").inner_text() == DEMO_JUDGE_NAME
    page.click("button:has-text('Start judging')")
    page.wait_for_selector(".job[data-status=succeeded]", timeout=120_000)
    assert page.locator("[data-testid=job-result]").count() == 1, worker.log_text()
    assert "{" not in page.locator("[data-testid=job-result]").inner_text()

    # -> leaderboard, judged by the offline heuristic and saying so.
    page.click("[data-testid=leaderboard-link]")
    assert "not a real judge" in page.locator("h1").inner_text()
    row = page.locator("#leaderboard tr[data-system='EchoChat (demo)']").locator("td").all_inner_texts()
    # Models, 11 score columns, Excluded: the heuristic does not listen, so Content (index 8) is a
    # number and All (index 11), which needs the audio score, is left empty and the page says why;
    # each figure's n/N is on the line under it.
    figures = [cell.split("\n")[0] for cell in row]
    assert figures[0] == "EchoChat (demo)" and figures[8] not in ("-", "") and figures[11] == "-", row
    assert page.locator("[data-testid=content-only-note]").is_visible()

    # -> a listening study with the audio dimensions, kept short for the test (one rater, 4 samples).
    page.goto(f"{live_server.url}/")
    page.click("#admin-links >> text=Listening studies")
    page.click("text=Design a new study")
    page.fill("input[name=name]", "First listening study")
    for name, value in (
        ("items_per_system", "2"),
        ("ratings_per_output", "1"),
        ("training_count", "0"),
        ("trap_count", "0"),
    ):
        page.fill(f"input[name={name}]", value)
    for other in ("evaluator2", "evaluator3"):
        page.uncheck(f"input[name=evaluators][value='{User.objects.get(username=other).pk}']")
    page.click("button[type=submit]:has-text('Create')")
    page.wait_for_selector("text=is open to its raters", timeout=90_000)
    study = Study.objects.get(name="First listening study")
    assert set(study.dimensions) >= AUDIO_DIMENSIONS

    # An evaluator listens to every reply to its end and rates it on every dimension.
    _log_out(page)
    log_in(page, live_server, "evaluator1")
    page.click("text=Start")
    total = study.assignments.filter(evaluator__username="evaluator1").count()
    assert total == 4  # two items from each demo system
    for number in range(1, total + 1):
        page.wait_for_selector(f"[data-testid=progress-text]:has-text('Sample {number} of {total}')")
        wait_for_keys(page)
        page.keyboard.press(" ")
        page.wait_for_selector("#rating[data-unlocked=true]", timeout=30_000)
        for _ in study.dimensions:  # a digit scores, the down arrow moves on (the page's hint)
            page.keyboard.press("4")
            page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=study-done]")
    rated = set(StudyRating.objects.filter(assignment__study=study).values_list("dimension", flat=True))
    assert rated >= AUDIO_DIMENSIONS

    # The admin starts SFT from the form as it comes: the train split, which has ready items.
    _log_out(page)
    log_in(page, live_server, "admin", start="/")
    page.click("#admin-links >> text=EchoChat training and inference")
    page.click("text=Retrain with SFT")
    assert page.locator("input[name=splits][value=train]").is_checked()
    assert not page.locator("input[name=splits][value=test]").is_checked()
    page.click("button:has-text('Start')")
    page.wait_for_selector("[data-testid=snapshot]")
    job = Job.objects.filter(kind=SFT_JOB).get()
    snapshot = DatasetSnapshot.objects.get(job=job)
    assert snapshot.splits == ["train"] and snapshot.size >= 3
    assert job.status in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.SUCCEEDED)
    # The tiny model trains on the worker's CPU; this test stops it rather than wait.
    if not Job.objects.get(pk=job.pk).is_finished:
        page.click("button:has-text('Cancel')")
