"""A worker rides out its database connections being dropped (what a PostgreSQL restart does) in the
middle of a judge run, a build stage and a training job: each ends once, with every row, no
duplicates, no failure. PostgreSQL only: connections are dropped with pg_terminate_backend, only
those to the test's own database, never the test's own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from ml.builder.models import Build, SampleStage
from ml.builder.runner import start_build
from ml.builder.stages import RESPONSES
from ml.jobs.launch import SFT_JOB, start_ml_job
from ml.jobs.models import Checkpoint
from tests.conftest import only_on_postgresql, wait_until
from tests.evaluation.judging_support import BenchmarkItemFactory, rubric_judge
from tests.factories import ModelOutputFactory
from tests.ml.builder.support import make_build, make_taxonomy
from tests.ml.jobs.builds.support import exported_build
from tests.ml.jobs.support import tiny_sft_parameters
from tests.support.builder_llm import builder_responder
from tests.support.fake_chat_server import running_chat_server
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


def _ended_once(job_id: int, worker_log: str) -> Job:
    wait_until(lambda: _job(job_id).is_finished, 180, f"job {job_id} never ended:\n{worker_log}")
    job = _job(job_id)
    assert (job.status, job.attempts, job.error) == (JobStatus.SUCCEEDED, 1, "")
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

    # a judge run: 6 outputs, 4 stages each, one prompt at a time
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
        assert drop_every_other_connection() >= 1
        _ended_once(run.job.pk, worker.log_text())
    judged = Counter(Judgement.objects.filter(run=run).values_list("output_id", "stage"))
    assert len(judged) == 6 * 4 and set(judged.values()) == {1}
    assert not Judgement.objects.filter(score__isnull=True).exists()

    # a build: dropped while its reasoning stage is half-way
    make_taxonomy()
    with running_chat_server(builder_responder(delay_s=0.05)) as server:
        build = make_build(server.base_url, single=12, dialogues=0, batch_size=2, audio_threads=1)
        start_build(build)
        wait_until(
            lambda: SampleStage.objects.filter(stage=RESPONSES, status="done").count() >= 3,
            120,
            f"reasoning never got going:\n{worker.log_text()}",
        )
        assert drop_every_other_connection() >= 1
        wait_until(
            lambda: Build.objects.get(pk=build.pk).export_path != "", 180, f"not built:\n{worker.log_text()}"
        )
    for stage_job in Job.objects.filter(kind="builder_stage"):
        assert (stage_job.status, stage_job.attempts) == (JobStatus.SUCCEEDED, 1)
    rows = SampleStage.objects.filter(build=build)
    assert not rows.exclude(status="done").exists()
    assert rows.filter(stage=RESPONSES).count() == len(set(rows.filter(stage=RESPONSES).values_list("sample_id")))

    # a training job: dropped between two of its steps
    source = exported_build(tmp_path / "export")
    steps = 30
    job = start_ml_job(SFT_JOB, started_by=None, parameters=tiny_sft_parameters(max_steps=steps), build=source)
    wait_until(lambda: len(_job(job.pk).metrics) >= 3, 180, f"training never began:\n{worker.log_text()}")
    assert drop_every_other_connection() >= 1
    trained = _ended_once(job.pk, worker.log_text())
    assert [point["step"] for point in trained.metrics] == list(range(1, steps + 1))
    assert Checkpoint.objects.filter(produced_by=trained).count() == 1
    assert "retry 1 of 8" in worker.log_text()
