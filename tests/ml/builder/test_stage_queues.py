"""Build stages go to the queues a lab names: the audio stages to a pool of their own, run by the
workers started on it, while the LLM stages and planning stay with the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from ml.builder.models import Build
from ml.builder.runner import stage_queue, start_build
from ml.builder.stages import AUDIO_STAGES, LLM_STAGES, PLAN, USER_AUDIO
from tests.conftest import wait_until
from tests.ml.builder.support import make_build, make_taxonomy
from tests.support.builder_llm import builder_responder
from tests.support.fake_chat_server import running_chat_server
from webapp.jobs import start_job
from webapp.models import Job, JobStatus

AUDIO_POOL = "builder-audio"


def test_stages_go_to_the_named_pools(settings) -> None:
    settings.BUILDER_AUDIO_QUEUE, settings.BUILDER_LLM_QUEUE = AUDIO_POOL, "builder-llm"
    assert {stage_queue(stage) for stage in AUDIO_STAGES} == {AUDIO_POOL}
    assert {stage_queue(stage) for stage in LLM_STAGES} == {"builder-llm"}
    assert stage_queue(PLAN) == "default"


def test_a_job_cannot_be_sent_to_a_queue_no_worker_is_told_of(db) -> None:
    with pytest.raises(ValueError, match="unknown queue"):
        start_job("builder_stage", parameters={}, queue="nowhere")


@pytest.mark.services
@pytest.mark.slow
def test_audio_stages_wait_for_a_worker_on_their_pool(worker_factory, tmp_path: Path) -> None:
    env = {
        "ECHOSTUDIO_BUILDER_AUDIO_QUEUE": AUDIO_POOL,
        "ECHOSTUDIO_MEDIA_ROOT": str(tmp_path / "media"),
        "ECHOSTUDIO_VAR_DIR": str(tmp_path / "var"),
    }
    make_taxonomy()
    with running_chat_server(builder_responder()) as server:
        build = make_build(server.base_url, single=4, dialogues=1)
        # given a worker on the usual queues only
        light = worker_factory(**env)
        start_build(build)

        # then planning and the LLM stages run, and the first audio stage waits on its pool
        def user_audio_job() -> Job | None:
            return Job.objects.filter(kind="builder_stage", parameters__stage=USER_AUDIO).first()

        wait_until(lambda: user_audio_job() is not None, 120, f"no user-audio job:\n{light.log_text()}")
        # A job sent after the audio stage's, run by the same worker: it has taken work queued later
        # (so it had its chance at the audio job) and still left the audio job alone.
        probe = start_job("diagnostic_sleep", parameters={"steps": 1, "delay_s": 0})
        wait_until(
            lambda: Job.objects.get(pk=probe.pk).status == JobStatus.SUCCEEDED,
            60,
            f"the first worker stopped taking work:\n{light.log_text()}",
        )
        waiting = user_audio_job()
        assert waiting is not None and (waiting.queue, waiting.status) == (AUDIO_POOL, JobStatus.QUEUED)

        # when a worker starts on the audio pool, the build finishes
        heavy = worker_factory(AUDIO_POOL, **env)
        wait_until(
            lambda: Build.objects.get(pk=build.pk).export_path != "",
            180,
            f"not finished:\n{light.log_text()}\n{heavy.log_text()}",
        )

    # and every audio stage ran on the audio worker, every other job (the probe too) on the first one
    for job in Job.objects.filter(status=JobStatus.SUCCEEDED):
        pid = int(job.worker.rsplit(":", 1)[1])
        stage = job.parameters.get("stage")
        assert heavy.owns_pid(pid) == (stage in AUDIO_STAGES), (job.kind, stage, job.queue)
        assert light.owns_pid(pid) == (stage not in AUDIO_STAGES)
