import pytest
from ml.launch import SFT_JOB, start_ml_job
from ml.models import Checkpoint
from tests.ml_jobs.support import make_ready_item, tiny_sft_parameters
from webapp.models import Job

pytestmark = pytest.mark.browser

def test_shots(browser_page, live_server, users, ml_storage, transactional_db):
    make_ready_item(users["actor"], "TR-0")
    job = start_ml_job(SFT_JOB, started_by=users["admin"], parameters=tiny_sft_parameters(), splits=["train"])
    Job.objects.filter(pk=job.pk).update(status="running", progress=0.4, message="step 4/10", metrics=[{"step": i, "loss": 3/(i), "ce": 2.9/i, "aaa": 0.5 - i*0.01, "rho": 0.1+0.05*i} for i in range(1, 11)], log="12:00:00 SFT on 1 examples")
    Checkpoint.objects.create(name="sft-1", kind="sft", uri="/models/sft-1", produced_by=job, metadata={"metrics": {"loss": 0.3}})
    page = browser_page
    page.goto(live_server.url + "/accounts/login/")
    page.fill("input[name=username]", "admin"); page.fill("input[name=password]", "pw-for-tests-123"); page.click("main button[type=submit]")
    page.goto(live_server.url + f"/manage/training/jobs/{job.pk}/")
    page.wait_for_timeout(2500)
    page.screenshot(path="/tmp/ml_job.png", full_page=True)
    page.goto(live_server.url + "/manage/training/start/sft_aaa/")
    page.screenshot(path="/tmp/ml_start.png", full_page=True)
    page.goto(live_server.url + "/manage/training/")
    page.screenshot(path="/tmp/ml_home.png", full_page=True)
