"""A build whose stage job was cancelled resumes where it stopped; a build starts only once."""

from __future__ import annotations

import pytest

from ml.builder.models import SampleStage
from ml.builder.runner import BuildBusy, resume_build, start_build
from tests.ml.builder.support import make_build, make_taxonomy, run_queued_jobs
from tests.support.builder_llm import builder_responder, repeated_prompts
from tests.support.fake_chat_server import running_chat_server
from webapp.jobs import cancel_job, run_job
from webapp.models import Job, JobStatus


def _run_until_stage(stage: str) -> Job:
    while True:
        job = Job.objects.filter(status=JobStatus.QUEUED).order_by("id").get()
        if job.parameters.get("stage") == stage:
            return job
        run_job(job.pk)


def test_a_cancelled_stage_resumes_and_the_build_finishes_once(
    transactional_db, media_root, queued_here
) -> None:
    make_taxonomy()
    with running_chat_server(builder_responder()) as server:
        build = make_build(server.base_url, single=6, dialogues=1)
        start_build(build)
        with pytest.raises(BuildBusy):
            start_build(build)

        # given the quality filter stage was cancelled before it ran
        cancel_job(_run_until_stage("query_filter"))
        build.refresh_from_db()

        # when an admin resumes the build
        resumed = resume_build(build)
        jobs = run_queued_jobs()

    # then the stopped stage ran again and everything after it, each prompt paid once
    assert resumed[0].parameters["stage"] == "query_filter"
    assert {job.status for job in jobs} == {JobStatus.SUCCEEDED}
    assert repeated_prompts(server) == []
    assert not SampleStage.objects.exclude(status="done").exists()
    build.refresh_from_db()
    assert build.status == "succeeded"
    assert build.stage("response_audio").status == "done"
