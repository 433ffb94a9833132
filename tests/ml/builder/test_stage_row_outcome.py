"""A build stage ends in the one status vocabulary of jobs over many rows (docs/jobs.md): some failed
rows finish it with errors and the build goes on; beyond the threshold the build stops as failed,
and resuming it does again only the rows that failed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from ml.builder import runner
from ml.builder.claims import SampleResult
from ml.builder.models import Build, BuildSample, BuildStatus, StageStatus
from ml.builder.stages import LLM_ERROR, QUERIES
from tests.ml.builder.support import make_build, make_taxonomy
from webapp.jobs import run_job
from webapp.models import Job, JobStatus


def _queries_step(failing: set[int]) -> Callable[[Sequence[BuildSample], Any], list[SampleResult]]:
    """A user-queries step that fails the samples in `failing` (one raises, the rest are LLM errors)."""

    def step(samples: Sequence[BuildSample], context: Any) -> list[SampleResult]:
        results = []
        for sample in samples:
            if sample.pk == min(failing, default=0):
                raise RuntimeError("the step broke on this sample")
            if sample.pk in failing:
                results.append(SampleResult(sample.pk, False, LLM_ERROR, "the endpoint answered 503"))
            else:
                results.append(SampleResult(sample.pk, True))
        return results

    return step


def _build_at_queries(fail: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Build, Job]:
    """Start a build of ten single-turn samples and run it through its queries stage, `fail` of
    whose rows fail; return the build and the queries stage's job."""
    make_taxonomy()
    build = make_build("http://unused.invalid/v1", single=10, dialogues=0)
    runner.start_build(build)
    while (job := Job.objects.filter(status=JobStatus.QUEUED).order_by("id").get()).parameters[
        "stage"
    ] != QUERIES:
        run_job(job.pk)
    failing = set(BuildSample.objects.order_by("pk").values_list("pk", flat=True)[:fail])
    monkeypatch.setitem(runner.STEPS, QUERIES, _queries_step(failing))
    run_job(job.pk)
    job.refresh_from_db()
    build.refresh_from_db()
    return build, job


def _page_and_api(client: Client, build: Build) -> tuple[str, dict[str, Any]]:
    page = client.get(reverse("ml:builder:build", args=[build.pk])).content.decode()
    api = client.get(reverse("ml:builder:api_build", args=[build.pk]))
    assert api.status_code == 200
    return page, api.json()


def test_a_stage_with_some_failed_rows_finishes_with_errors_and_the_build_goes_on(
    transactional_db: None,
    media_root: Any,
    queued_here: None,
    monkeypatch: pytest.MonkeyPatch,
    client_for: Callable[[str], Client],
) -> None:
    # given a queries stage on which 3 of 10 rows failed (one raised, two were LLM errors)
    build, job = _build_at_queries(3, monkeypatch)

    # then its job finished with errors, with the count and the share
    assert job.status == JobStatus.FINISHED_WITH_ERRORS
    assert job.message == "Finished with errors: 3 of 10 samples failed (30%)"
    assert job.result is not None and job.result["rows"]["failed"] == 3
    # and the build went on to the next stage
    assert build.status == BuildStatus.RUNNING and build.stage(QUERIES).status == StageStatus.DONE
    assert build.stage("query_filter").status == StageStatus.RUNNING
    # and the build page and the API say so for the stage
    page, api = _page_and_api(client_for("admin"), build)
    assert (
        '<small class="status-finished_with_errors" data-testid="stage-outcome">Finished with errors: 3 of 10 samples failed (30%)</small>'
        in page
    )
    queries = next(stage for stage in api["stages"] if stage["stage"] == QUERIES)
    assert queries["outcome"] == "finished_with_errors"
    assert queries["summary"] == "Finished with errors: 3 of 10 samples failed (30%)"
    assert (queries["rows"]["total"], queries["rows"]["failed"], queries["rows"]["percent"]) == (10, 3, "30%")
    assert (api["status"], api["outcome"]) == ("running", "")

    # when the build has finished (as the last stage's `advance` leaves it; the later stages, each
    # run the same way, are left out to keep this test fast)
    Job.objects.filter(status=JobStatus.QUEUED).update(status=JobStatus.CANCELLED)
    build.stages.exclude(stage=QUERIES).update(status=StageStatus.DONE)
    Build.objects.filter(pk=build.pk).update(status=BuildStatus.SUCCEEDED)
    build.refresh_from_db()

    # then the build as a whole finished with errors, on its page and in the API
    assert build.status == BuildStatus.SUCCEEDED
    page, api = _page_and_api(client_for("admin"), build)
    assert 'data-testid="build-status">Finished with errors: 3 of 10 samples failed (30%)</small>' in page
    assert (api["outcome"], api["rows"]["failed"], api["rows"]["total"]) == ("finished_with_errors", 3, 10)
    listed = client_for("admin").get(reverse("ml:builder:builds")).content.decode()
    assert 'Finished <span class="row-tally">· 3 of 10 samples failed (30%)</span>' in listed


def test_a_stage_whose_rows_failed_beyond_the_threshold_fails_the_build_and_resumes_its_failed_rows(
    transactional_db: None,
    media_root: Any,
    queued_here: None,
    monkeypatch: pytest.MonkeyPatch,
    client_for: Callable[[str], Client],
) -> None:
    # given a queries stage on which 6 of 10 rows failed
    build, job = _build_at_queries(6, monkeypatch)

    # then its job failed by its rows, the build failed there and no later stage started
    assert job.status == JobStatus.FAILED
    assert job.error == "Failed: 6 of 10 samples failed (60%), more than 50%"
    assert build.status == BuildStatus.FAILED and build.stage(QUERIES).status == StageStatus.FAILED
    assert build.stage("query_filter").status == StageStatus.PENDING
    assert not Job.objects.filter(status=JobStatus.QUEUED).exists()
    # and the page and the API say where and why it stopped
    page, api = _page_and_api(client_for("admin"), build)
    reason = (
        "Failed at User queries (LLM): 6 of 10 samples failed (60%), more than 50%, so nothing usable "
        "would come downstream; the build stopped there."
    )
    assert reason in page and 'data-testid="resume-form"' in page
    assert api["outcome"] == "failed" and api["summary"].startswith(reason)
    assert next(s for s in api["stages"] if s["stage"] == QUERIES)["outcome"] == "failed"

    # when the cause is fixed and the build resumed, only the six failed rows are done again
    monkeypatch.setitem(runner.STEPS, QUERIES, _queries_step(set()))
    resumed = runner.resume_build(build)
    assert [job.parameters["stage"] for job in resumed] == [QUERIES]
    run_job(resumed[0].pk)
    resumed[0].refresh_from_db()
    build.refresh_from_db()
    assert resumed[0].status == JobStatus.SUCCEEDED
    assert resumed[0].message == "Succeeded: all 6 samples done"
    assert build.status == BuildStatus.RUNNING and build.stage(QUERIES).status == StageStatus.DONE
    assert build.stage(QUERIES).counts["errors"] == 0 and build.stage(QUERIES).counts["kept"] == 10
    assert build.provenance["tightenings"][-1]["retried_errors"] == 6
