"""Real Chromium: an admin points a system at a serving endpoint from the training page; the job
is queued with the endpoint, the model and the key's variable (never a key), on the default queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ml.jobs.launch import ENDPOINT_INFERENCE_JOB
from tests.ml.jobs.support import TrainingItemFactory
from tests.support.browser import log_in
from webapp.lib import vocabulary
from webapp.models import Job

pytestmark = [pytest.mark.browser]


def test_admin_starts_endpoint_inference_from_the_training_page(
    browser_page: Any, live_server: Any, users: Any, media_root: Path, screenshots: Path
) -> None:
    TrainingItemFactory.create(external_id="EE-00", split=vocabulary.TEST, with_gold=False)
    page = browser_page
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/manage/training/")
    page.click("text=Run inference at a serving endpoint")
    page.fill("input[name=endpoint_url]", "http://127.0.0.1:8000/v1")
    page.fill("input[name=model]", "echochat-rl-1")
    page.fill("input[name=system_name]", "EchoChat rl-1 at vLLM")
    page.select_option("select[name=dialogue_history]", "")
    assert page.locator("#start-form").inner_text().count("only talks HTTP") == 1
    page.screenshot(path=str(screenshots / "endpoint-form.png"), full_page=True)
    page.click("#start-form button[type=submit]")
    page.wait_for_url(f"{live_server.url}/manage/training/jobs/*/")
    page.screenshot(path=str(screenshots / "endpoint-job.png"), full_page=True)
    job = Job.objects.get(kind=ENDPOINT_INFERENCE_JOB)
    assert job.queue == "default"
    assert {key: job.parameters[key] for key in ("endpoint_url", "model", "key_variable", "system_name")} == {
        "endpoint_url": "http://127.0.0.1:8000/v1",
        "model": "echochat-rl-1",
        "key_variable": "",
        "system_name": "EchoChat rl-1 at vLLM",
    }
    assert job.parameters["splits"] == [vocabulary.TEST]
