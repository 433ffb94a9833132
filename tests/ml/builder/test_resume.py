"""A build whose stage job was cancelled resumes where it stopped (from its page too); a build starts
only once."""

from __future__ import annotations

import pytest
from django.urls import reverse

from ml.builder.models import Build, BuildStage, SampleStage, StageStatus
from ml.builder.runner import BuildBusy, resume_build, start_build, stopped_short
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


def test_the_build_page_resumes_a_stopped_build_and_only_a_stopped_one(
    transactional_db, media_root, queued_here, client_for
) -> None:
    make_taxonomy()
    with running_chat_server(builder_responder()) as server:
        build = make_build(server.base_url, single=4, dialogues=0)
        start_build(build)
        page = reverse("ml:builder:build", args=[build.pk])
        resume = reverse("ml:builder:resume", args=[build.pk])
        admin = client_for("admin")

        # while it runs there is nothing to resume, and a resume asked for anyway starts nothing
        assert 'data-testid="resume-form"' not in admin.get(page).content.decode()
        queued = Job.objects.filter(status=JobStatus.QUEUED).count()
        refused = admin.post(resume, follow=True).content.decode()
        assert "Not resumed: the build still has stage jobs queued or running." in refused
        assert Job.objects.filter(status=JobStatus.QUEUED).count() == queued

        # given the query filter's job was cancelled before a worker took it, the page offers the resume
        cancel_job(_run_until_stage("query_filter"))
        assert 'data-testid="resume-form"' in admin.get(page).content.decode()

        # when the admin resumes it, the stopped stage is queued again, and the build finishes
        done = admin.post(resume, follow=True).content.decode()
        assert "Quality and safety filter (LLM) starts again (1 job); later stages follow." in done
        restarted = Job.objects.filter(status=JobStatus.QUEUED).get()
        assert restarted.parameters["stage"] == "query_filter"
        assert restarted.started_by is not None and restarted.started_by.username == "admin"
        run_queued_jobs()

    assert Build.objects.get(pk=build.pk).status == "succeeded"
    assert not BuildStage.objects.filter(build=build).exclude(status=StageStatus.DONE).exists()
    assert 'data-testid="resume-form"' not in admin.get(page).content.decode()
    assert "nothing to resume" in admin.post(resume, follow=True).content.decode()


def test_a_build_stops_short_only_when_started_unfinished_and_idle(
    transactional_db, media_root, queued_here
) -> None:
    make_taxonomy()
    with running_chat_server(builder_responder()) as server:
        build = make_build(server.base_url, single=4, dialogues=0)
        assert not stopped_short(build)  # a draft has not started
        start_build(build)
        assert not stopped_short(Build.objects.get(pk=build.pk))  # its first stage is queued
        job = Job.objects.filter(status=JobStatus.QUEUED).get()
        Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED)  # as a worker lost mid-job leaves it
        assert stopped_short(Build.objects.get(pk=build.pk))
