"""Real Chromium + a real worker: an admin starts a job from the UI and watches it finish."""

from __future__ import annotations

import os

import pytest

from annotation.demo.recording import DEMO_ITEMS, store_demo_take
from annotation.recording.models import Item
from tests.support.browser import log_in
from webapp.models import Job, JobStatus

pytestmark = [pytest.mark.browser, pytest.mark.services]


def test_admin_starts_a_job_and_its_progress_bar_reaches_done(
    browser_page, live_server, users, worker_factory
) -> None:
    for demo in DEMO_ITEMS[:3]:
        item = Item.objects.create(
            external_id=demo.external_id,
            text=demo.text,
            scenario=demo.scenario,
            target_emotion=demo.emotion,
            actor=users["actor"],
        )
        store_demo_take(item, users["actor"], demo)
    worker_factory()
    page = browser_page
    log_in(page, live_server, "admin")
    page.click("text=Re-synthesise demo speech")
    page.wait_for_url(f"{live_server.url}/manage/jobs/*/")
    page.locator("[data-testid=job-status]", has_text="Succeeded").wait_for(timeout=60_000)
    assert page.locator(".progress").get_attribute("aria-valuenow") == "100"
    job = Job.objects.get(kind="resynthesize_demo_audio")
    assert job.status == JobStatus.SUCCEEDED
    assert job.result == {"takes": 3}
    assert job.worker.split(":")[1] != str(os.getpid()), "the job must run in the worker process"
