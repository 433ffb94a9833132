"""Tightening a filter re-runs only the stages it affects, without paying the LLM again for answers it has."""

from __future__ import annotations

import pytest

from ml.builder.models import BuildSample, SampleStage
from ml.builder.pages.retune import tighten
from ml.builder.runner import BuildBusy, rerun_from, start_build
from tests.ml.builder.pages.spotcheck_builds import finished_build
from tests.ml.builder.support import make_build, make_taxonomy, run_queued_jobs
from tests.support.builder_llm import builder_responder, calls_by_stage
from tests.support.fake_chat_server import running_chat_server
from webapp.models import Job, JobStatus
from webapp.roles import Role


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


def test_a_rerun_of_some_samples_redoes_only_them_and_keeps_every_earlier_rerun_on_record(
    db, queued_here, make_user
) -> None:
    # given a finished build that was tightened once already
    admin = make_user(Role.ADMIN)
    build = finished_build(single=4)
    tighten(build, "response_min_score", 4, admin)
    for job in Job.objects.filter(status=JobStatus.QUEUED):
        job.status = JobStatus.SUCCEEDED
        job.save(update_fields=["status"])
    SampleStage.objects.filter(build=build).update(status="done")
    first, *others = BuildSample.objects.filter(build=build).order_by("id")
    before = {row.pk for row in SampleStage.objects.filter(build=build, sample__in=others)}

    # when the build is re-run from the perception stage for one sample only
    jobs, count = rerun_from(
        build, "perception", {"consistency_min_confidence": 0.6}, admin, samples={first.pk}
    )

    # then that sample's rows from perception on are gone (to be redone), everyone else's are kept
    assert count == 1 and [job.parameters["stage"] for job in jobs] == ["perception"]
    assert not SampleStage.objects.filter(sample=first, stage__in=["perception", "responses"]).exists()
    assert SampleStage.objects.filter(sample=first, stage="consistency").exists()
    assert {row.pk for row in SampleStage.objects.filter(build=build, sample__in=others)} == before
    # and the provenance holds both re-runs, the tightening first
    build.refresh_from_db()
    tightenings = build.provenance["tightenings"]
    assert [entry["stage"] for entry in tightenings] == ["response_filter", "perception"]
    assert tightenings[0]["setting"] == "response_min_score" and tightenings[0]["to"] == 4
    assert tightenings[1]["changes"] == {"consistency_min_confidence": 0.6}
    assert tightenings[1]["samples"] == 1 and tightenings[1]["by"] == admin.get_username()
    assert build.config["consistency_min_confidence"] == 0.6 and build.config["response_min_score"] == 4


def test_a_rerun_naming_one_turn_of_a_dialogue_redoes_the_whole_dialogue(db, queued_here) -> None:
    build = finished_build(single=1, dialogues=1)
    turns = list(BuildSample.objects.filter(build=build, dialogue__isnull=False).order_by("turn"))
    _, count = rerun_from(build, "responses", {}, samples={turns[1].pk})
    assert count == 3
    assert not SampleStage.objects.filter(sample__in=turns, stage="responses").exists()
    assert (
        SampleStage.objects.filter(build=build, sample__dialogue__isnull=True, stage="responses").count() == 1
    )
