"""Journey: a judge answering garbage, and one answering half garbage, end in the documented statuses
(``evaluation.judging.models.run_outcome``), with the same counts on the run page, in the API and in what the
client prints (the API's JSON)."""

from __future__ import annotations

import re

import pytest

from evaluation.judging.models import JudgeConfig, JudgeRun
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory, good_answer, stage_of
from tests.factories import ModelOutputFactory
from tests.support.fake_chat_server import RecordedRequest, Reply, chat_reply, json_reply, running_chat_server
from webapp.jobs import run_job
from webapp.models import JobStatus

pytestmark = pytest.mark.usefixtures("media_root")
GARBAGE_STAGES = {"perception", "response_content"}  # two of the four stages of each output


def _judged(system: System, handler) -> JudgeRun:
    with running_chat_server(handler) as server:
        config = JudgeConfig.objects.create(
            name=f"judge-{JudgeConfig.objects.count()}",
            base_url=server.base_url,
            model="m",
            attach_audio=True,
        )
        run = start_judge_run(system, "echoeval-v1", config, started_by=None)
        assert run.job is not None
        run_job(run.job.pk)
    return JudgeRun.objects.select_related("job").get(pk=run.pk)


def _page_counts(client, run: JudgeRun) -> tuple[str, dict[str, int]]:
    page = client.get(f"/manage/judge-runs/{run.pk}/").content.decode()
    counts = {
        key: int(re.search(rf'data-testid="{testid}">(\d+)<', page).group(1))  # type: ignore[union-attr]
        for key, testid in (
            ("valid", "valid-count"),
            ("invalid_json", "invalid-json-count"),
            ("rubric", "rubric-count"),
        )
    }
    status = re.search(r'data-testid="run-status" data-status="([a-z_]+)"', page)
    assert status is not None
    return status.group(1), counts


@pytest.mark.parametrize(
    ("garbage", "status", "job_status", "valid", "errors"),
    [
        (lambda stage: True, "failed", JobStatus.FAILED, 0, 12),
        (lambda stage: stage in GARBAGE_STAGES, "finished_with_errors", JobStatus.SUCCEEDED, 6, 6),
        (lambda stage: False, "succeeded", JobStatus.SUCCEEDED, 12, 0),
    ],
    ids=["all-garbage", "half-garbage", "no-garbage"],
)
def test_a_run_says_what_happened_with_the_same_counts_everywhere(
    db, client_for, garbage, status, job_status, valid, errors
) -> None:
    # given three outputs (four rubric stages each) and a judge that answers garbage for some stages
    system = System.objects.create(name="Omni-X")
    for number in (1, 2, 3):
        ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id=f"EE-{number}"))

    def answer(request: RecordedRequest) -> Reply:
        stage = stage_of(request)
        return chat_reply("Quite good, I would say!") if garbage(stage) else json_reply(good_answer(stage))

    # when the run has finished
    run = _judged(system, answer)

    # then its status is the documented one, and the job agrees
    assert run.job is not None
    assert run.job.status == job_status, run.job.error
    assert run.status() == status
    expected = {"valid": valid, "invalid_json": errors, "rubric": 0}
    assert run.counts() == expected
    # and the page, the API and the client (which prints the API's JSON) show those very numbers
    admin = client_for("admin")
    assert _page_counts(admin, run) == (status, expected)
    api = admin.get(f"/api/judge-runs/{run.pk}/").json()
    assert (api["status"], api["counts"]) == (status, expected)
    if status == "failed":
        assert "no valid judgement came back (12 judge errors)" in (run.job.error or "")
