"""An endpoint that keeps failing drops its samples with the reason; the build still ends, nothing hangs."""

from __future__ import annotations

from ml.builder.models import BuildSample
from ml.builder.runner import start_build
from tests.ml.builder.support import make_build, make_taxonomy, run_queued_jobs
from tests.support.fake_chat_server import running_chat_server, status_reply
from webapp.models import JobStatus


def test_a_failing_endpoint_drops_samples_as_llm_errors_after_its_retries(
    transactional_db, media_root, queued_here
) -> None:
    make_taxonomy()
    with running_chat_server(lambda request: status_reply(503, retry_after=0)) as server:
        build = make_build(server.base_url, single=4, dialogues=1)
        start_build(build)
        jobs = run_queued_jobs()

    assert {job.status for job in jobs} == {JobStatus.SUCCEEDED}
    trajectories, queries = build.stage("trajectories").counts, build.stage("queries").counts
    assert trajectories["reasons"] == {"llm_error": 1, "dialogue_turn_dropped": 4}
    assert queries == {"made": 4, "kept": 0, "dropped": 4, "reasons": {"llm_error": 4}}
    # one retry each (max_retries=1), as configured
    assert len(server.chat_requests) == 2 * (1 + 4)
    assert not BuildSample.objects.filter(build=build, status="active").exists()
    assert build.stage("response_audio").counts["made"] == 0
