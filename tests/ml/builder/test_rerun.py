"""Tightening a filter re-runs only the stages it affects, without paying the LLM again for answers it has."""

from __future__ import annotations

import pytest

from ml.builder.models import SampleStage
from ml.builder.runner import BuildBusy, rerun_from, start_build
from tests.ml.builder.support import make_build, make_taxonomy, run_queued_jobs
from tests.support.builder_llm import builder_responder, calls_by_stage
from tests.support.fake_chat_server import running_chat_server
from webapp.models import Job, JobStatus


def test_a_tighter_response_filter_reruns_from_that_stage_only(
    transactional_db, media_root, queued_here
) -> None:
    # given a finished build
    make_taxonomy()
    with running_chat_server(builder_responder()) as server:
        build = make_build(server.base_url, single=12, dialogues=1)
        start_build(build)
        run_queued_jobs()
        before = calls_by_stage(server)
        earlier_rows = dict(SampleStage.objects.filter(stage="queries").values_list("pk", "finished_at"))
        kept_before = build.stage("response_filter").counts["kept"]

        # when an admin demands a perfect score from the response filter and re-runs from it
        rerun_from(build, "response_filter", {"response_min_score": 5})
        jobs = run_queued_jobs()

    # then only the filter and the stages after it ran again, the LLM was not asked again
    assert {job.parameters.get("stage") for job in jobs if job.kind == "builder_stage"} == {
        "response_filter",
        "response_audio",
    }
    assert calls_by_stage(server) == before
    assert dict(SampleStage.objects.filter(stage="queries").values_list("pk", "finished_at")) == earlier_rows
    build.refresh_from_db()
    assert build.config["response_min_score"] == 5
    assert build.stage("response_filter").counts["kept"] <= kept_before
    assert all(job.status == JobStatus.SUCCEEDED for job in jobs)


def test_a_build_with_a_stage_running_cannot_be_rerun(transactional_db, queued_here) -> None:
    make_taxonomy()
    build = make_build("http://unused/v1", single=2, dialogues=0)
    start_build(build)
    assert Job.objects.filter(status=JobStatus.QUEUED).exists()
    with pytest.raises(BuildBusy):
        rerun_from(build, "queries", {})
