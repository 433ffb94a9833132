"""Journey: a real (stub) judge answering 0%, 40% and 100% garbage ends a run succeeded, finished with
errors and failed (``webapp.lib.row_outcome``), with the same status and counts on the run page, in the
runs list, in the API and in the `echostudio judge --wait` exit status; a re-run says what it left."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from evaluation.judging.models import JudgeConfig, JudgeRun
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory, good_answer, stage_of
from tests.factories import ModelOutputFactory
from tests.support.fake_chat_server import RecordedRequest, Reply, chat_reply, json_reply, running_chat_server
from webapp.api.tokens import create_token
from webapp.client import commands
from webapp.client.__main__ import run as client_run
from webapp.jobs import run_job
from webapp.models import Job, JobStatus

pytestmark = pytest.mark.usefixtures("media_root")
OUTPUTS = 5  # four rubric stages each: 20 stages
MARK = "[judge me badly]"


def _outputs(garbage_outputs: int) -> System:
    """Five spoken outputs; the first `garbage_outputs` carry a mark the stub judge answers garbage to."""
    system = System.objects.create(name="Omni-X")
    for number in range(OUTPUTS):
        mark = f" {MARK}" if number < garbage_outputs else ""
        ModelOutputFactory.create(
            system=system,
            item=BenchmarkItemFactory.create(external_id=f"EE-{number}"),
            perception_text=f"The user sounds sad.{mark}",
            reasoning_text=f"Context: alone{mark}",
            strategy_text=f"Strategies: emotional validation{mark}",
            response_text=f"I'm sorry.{mark}",
        )
    return system


def stub_judge(request: RecordedRequest) -> Reply:
    """Answer garbage to a prompt about a marked output, a valid judgement to any other."""
    if MARK in json.dumps(request.json):
        return chat_reply("Quite good, I would say!")
    return json_reply(good_answer(stage_of(request)))


def _page_status(client, run: JudgeRun) -> tuple[str, str]:
    page = client.get(f"/manage/judge-runs/{run.pk}/").content.decode()
    found = re.search(r'data-testid="run-status" data-status="([a-z_]+)">([^<]*)<', page)
    assert found is not None
    return found.group(1), found.group(2)


@pytest.mark.parametrize(
    ("garbage_outputs", "options", "status", "sentence", "exit_status"),
    [
        (0, [], "succeeded", "Succeeded: all 20 stages done", 0),
        (2, [], "finished_with_errors", "Finished with errors: 8 of 20 stages failed (40%)", 3),
        (
            2,
            ["--allow-errors"],
            "finished_with_errors",
            "Finished with errors: 8 of 20 stages failed (40%)",
            0,
        ),
        (5, [], "failed", "Failed: nothing usable, 20 of 20 stages failed (100%)", 2),
    ],
    ids=["0%-garbage", "40%-garbage", "40%-garbage-allowed", "100%-garbage"],
)
def test_a_run_says_what_happened_on_the_page_the_api_and_the_clients_exit_status(
    live_server,
    users,
    client_for,
    monkeypatch,
    capsys,
    garbage_outputs,
    options,
    status,
    sentence,
    exit_status,
) -> None:
    # given five outputs, a stub judge answering garbage to some, and a client whose --wait runs the
    # queued job where a worker would (each poll), so no worker process is needed
    system = _outputs(garbage_outputs)
    monkeypatch.setattr("webapp.celery.run_job_task.apply_async", lambda *args, **kwargs: None)
    monkeypatch.setattr(commands.time, "sleep", lambda _s: _run_queued_jobs())
    common = ["--url", live_server.url, "--token", create_token(users["admin"], "cli").secret, "--quiet"]

    with running_chat_server(stub_judge) as server:
        JudgeConfig.objects.create(name="stub", base_url=server.base_url, model="m", attach_audio=True)
        # when the script judges with --wait
        exit_code = client_run(
            [*common, "judge", "--system", "Omni-X", "--judge", "stub", "--wait", *options]
        )

    # then the client exits 0 only for a full success, and prints the status with its figures
    printed = capsys.readouterr()
    assert exit_code == exit_status, printed
    row = json.loads(printed.out)
    assert (row["status"], row["summary"]) == (status, sentence)
    assert sentence in printed.err
    # and the job, the page header, the runs list and the API say the same
    run = JudgeRun.objects.select_related("job").get(system=system)
    assert run.job is not None and run.job.status == status
    admin = client_for("admin")
    assert _page_status(admin, run) == (status, sentence)
    page = admin.get(f"/manage/judge-runs/{run.pk}/").content.decode()
    header = re.search(r'data-testid="run-header-status">(.*?)</small>', page, re.S)
    assert header is not None and header.group(1).startswith(JobStatus(status).label)
    listed = admin.get("/manage/judge-runs/").content.decode()
    shown = re.search(rf'data-testid="run-status-{run.pk}">(.*?)</td>', listed, re.S)
    assert shown is not None
    assert shown.group(1).startswith(JobStatus(status).label)
    if garbage_outputs:
        figures = f"{4 * garbage_outputs} of 20 stages failed ({20 * garbage_outputs}%)"
        assert figures in shown.group(1) and figures in header.group(1)
    api = admin.get(f"/api/judge-runs/{run.pk}/").json()
    assert (api["status"], api["summary"]) == (status, sentence)
    assert api["job"]["result"]["rows"]["failed"] == 4 * garbage_outputs


def test_with_allow_errors_a_failed_or_cancelled_run_still_exits_2() -> None:
    assert commands.wait_exit_status("failed", allow_errors=True) == 2
    assert (
        commands.wait_exit_status("cancelled")
        == commands.wait_exit_status("cancelled", allow_errors=True)
        == 2
    )


def test_a_rerun_over_garbage_without_retry_errors_fails_and_says_what_it_left(db, client_for) -> None:
    # given a run whose judge answered only garbage
    system = _outputs(OUTPUTS)
    first = _judged(system, stub_judge)
    assert first.status() == "failed"

    # when it is run again without re-judging errors (nothing new to judge)
    again = _judged(system, stub_judge, config=first.judge_config)

    # then it is as failed as the garbage it stands on, not "succeeded with 0 valid judgements"
    assert again.job is not None
    assert again.job.status == JobStatus.FAILED, again.job.error
    assert again.counts() == {"valid": 0, "invalid_json": 20, "rubric": 0}
    report = "This run judged 0 stages; it left 20 judge errors of earlier runs as they were"
    assert again.rerun_report().startswith(report)
    page = client_for("admin").get(f"/manage/judge-runs/{again.pk}/").content.decode()
    assert report in page
    api = client_for("admin").get(f"/api/judge-runs/{again.pk}/").json()
    assert api["status"] == "failed" and api["rerun"].startswith(report)

    # and re-judging the errors with a judge now answering well says what it re-did
    third = _judged(
        system,
        lambda request: json_reply(good_answer(stage_of(request))),
        config=first.judge_config,
        retry=True,
    )
    assert third.status() == "succeeded"
    assert third.rerun_report() == (
        "This run judged 20 stages, 20 of them judge errors of earlier runs judged again."
    )


def _judged(
    system: System,
    handler: Callable[[RecordedRequest], Reply],
    *,
    config: JudgeConfig | None = None,
    retry: bool = False,
) -> JudgeRun:
    with running_chat_server(handler) as server:
        if config is None:
            config = JudgeConfig.objects.create(
                name="stub", base_url=server.base_url, model="m", attach_audio=True
            )
        else:
            config.base_url = server.base_url
            config.save(update_fields=["base_url"])
        run = start_judge_run(system, "echoeval-v1", config, started_by=None, retry_errors=retry)
        assert run.job is not None
        run_job(run.job.pk)
    return JudgeRun.objects.select_related("job", "judge_config").get(pk=run.pk)


def _run_queued_jobs() -> None:
    for job_id in Job.objects.filter(status=JobStatus.QUEUED).values_list("pk", flat=True):
        run_job(job_id)
