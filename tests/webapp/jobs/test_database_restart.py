"""A worker rides out its database connections being dropped (what a PostgreSQL restart does) in the
middle of a judge run, a build stage and a training job: each ends once, with every row, no
duplicates, no failure. PostgreSQL only: connections are dropped with pg_terminate_backend, only
those to the test's own database, never the test's own."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from ml.builder.models import SampleStage, StageStatus
from ml.builder.runner import start_build
from ml.builder.stages import QUERIES, next_stage
from ml.jobs.launch import SFT_JOB, start_ml_job
from ml.jobs.models import Checkpoint
from tests.conftest import WorkerProcess, only_on_postgresql, wait_until
from tests.evaluation.judging_support import BenchmarkItemFactory, rubric_judge
from tests.factories import ModelOutputFactory
from tests.ml.builder.support import make_build, make_taxonomy
from tests.ml.jobs.builds.support import exported_build
from tests.ml.jobs.support import tiny_sft_parameters
from tests.support.builder_llm import builder_responder
from tests.support.fake_chat_server import running_chat_server
from webapp.jobs import cancel_job
from webapp.models import Job, JobStatus

pytestmark = [pytest.mark.services, pytest.mark.slow]

RETRY_QUICKLY = {
    "ECHOSTUDIO_JOB_HEARTBEAT_SECONDS": "0.2",
    "ECHOSTUDIO_JOB_STALE_AFTER_SECONDS": "30",
    "ECHOSTUDIO_JOB_RETRY_FIRST_SECONDS": "0.1",
    "ECHOSTUDIO_JOB_RETRY_MAX_SECONDS": "1",
    "ECHOSTUDIO_JOB_RETRY_TRANSIENT": "8",
}


def drop_every_other_connection() -> int:
    """Terminate every connection to the test database but this one; return how many."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


def _job(job_id: int) -> Job:
    return Job.objects.get(pk=job_id)


def _ended_once(job_id: int, worker: WorkerProcess) -> Job:
    """Wait for the job to end; check it succeeded on its first attempt after retrying a dropped
    connection (the worker logs each retry)."""
    wait_until(lambda: _job(job_id).is_finished, 180, f"job {job_id} never ended:\n{worker.log_text()}")
    job = _job(job_id)
    assert (job.status, job.attempts, job.error) == (JobStatus.SUCCEEDED, 1, ""), worker.log_text()
    assert re.search(rf"job {job_id}\b.*; retry 1 of 8 in", worker.log_path.read_text()), worker.log_text()
    return job


def test_jobs_ride_out_their_database_connections_being_dropped(
    worker_factory, settings, tmp_path: Path, media_root: Path
) -> None:
    only_on_postgresql("pg_terminate_backend is PostgreSQL's")
    settings.CHECKPOINT_DIR = tmp_path / "checkpoints"
    worker = worker_factory(
        **RETRY_QUICKLY,
        ECHOSTUDIO_MEDIA_ROOT=str(media_root),
        ECHOSTUDIO_VAR_DIR=str(tmp_path / "var"),
        ECHOSTUDIO_CHECKPOINT_DIR=str(settings.CHECKPOINT_DIR),
    )

    # given a judge run of 6 outputs, 4 stages each, one prompt at a time
    system = System.objects.create(name="Omni-X")
    for number in range(6):
        ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id=f"EE-{number}"))
    with running_chat_server(rubric_judge(delay_s=0.1)) as server:
        config = JudgeConfig.objects.create(
            name="judge", base_url=server.base_url, model="judge-model", max_concurrency=1, attach_audio=True
        )
        run = start_judge_run(system, "echoeval-v1", config, started_by=None)
        assert run.job is not None
        wait_until(lambda: Judgement.objects.count() >= 4, 90, f"no judging:\n{worker.log_text()}")

        # when its connections are dropped mid-run
        assert drop_every_other_connection() >= 1

        # then it ends once with every stage judged once
        _ended_once(run.job.pk, worker)
    judged = Counter(Judgement.objects.filter(run=run).values_list("output_id", "stage"))
    assert len(judged) == 6 * 4 and set(judged.values()) == {1}
    assert not Judgement.objects.filter(score__isnull=True).exists()

    # given a build whose query-writing stage is half-way
    make_taxonomy()
    with running_chat_server(builder_responder(delay_s=0.2)) as server:
        build = make_build(server.base_url, single=8, dialogues=0, batch_size=1)
        start_build(build)
        queries = SampleStage.objects.filter(build=build, stage=QUERIES)
        wait_until(
            lambda: queries.filter(status="done").count() >= 2,
            120,
            f"the stage never got going:\n{worker.log_text()}",
        )

        # when its connections are dropped
        assert drop_every_other_connection() >= 1

        # then the stage ends once, every sample done once, and the next stage starts
        stage_job = Job.objects.get(kind="builder_stage", parameters__stage=QUERIES)
        _ended_once(stage_job.pk, worker)
    assert queries.count() == queries.filter(status="done", claimed_attempt=1).count() == 8
    # only the sample in flight when the connection went was claimed again (batch_size=1)
    assert queries.filter(claims__gt=1).count() <= 1
    assert build.stage(QUERIES).status == StageStatus.DONE
    following = Job.objects.get(kind="builder_stage", parameters__stage=next_stage(QUERIES))
    cancel_job(following)  # the rest of the build is not this test's business

    # given a training job between two of its steps
    source = exported_build(tmp_path / "export")
    steps = 6
    job = start_ml_job(
        SFT_JOB, started_by=None, parameters=tiny_sft_parameters(max_steps=steps), build=source
    )
    wait_until(lambda: len(_job(job.pk).metrics) >= 1, 180, f"training never began:\n{worker.log_text()}")

    # when its connections are dropped
    assert drop_every_other_connection() >= 1

    # then it trains on: every step recorded once, one checkpoint
    trained = _ended_once(job.pk, worker)
    assert [point["step"] for point in trained.metrics] == list(range(1, steps + 1))
    assert Checkpoint.objects.filter(produced_by=trained).count() == 1
