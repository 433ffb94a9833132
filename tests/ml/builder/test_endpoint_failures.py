"""An endpoint that keeps failing drops its samples with the reason; the build still ends (failed, at
the first stage whose rows all failed: docs/jobs.md), nothing hangs."""

from __future__ import annotations

from ml.builder.runner import start_build
from tests.ml.builder.support import make_build, make_taxonomy, run_queued_jobs
from tests.support.fake_chat_server import running_chat_server, status_reply
from webapp.models import JobStatus


def test_a_failing_endpoint_drops_samples_as_llm_errors_after_its_retries(
    transactional_db, media_root, queued_here
) -> None:
    make_taxonomy()
    # Failing, not busy: no Retry-After (a busy endpoint gets its own budget, `max_busy_retries`).
    with running_chat_server(lambda request: status_reply(503)) as server:
        build = make_build(server.base_url, single=4, dialogues=1)
        start_build(build)
        jobs = run_queued_jobs()

    # the trajectories stage failed every row (its dialogue's turns with the LLM error), so the build
    # stopped there as failed: nothing usable would have come downstream
    assert [(job.parameters["stage"], job.status) for job in jobs] == [
        ("plan", JobStatus.SUCCEEDED),
        ("trajectories", JobStatus.FAILED),
    ]
    build.refresh_from_db()
    assert build.status == "failed" and build.stage("trajectories").status == "failed"
    trajectories = build.stage("trajectories").counts
    assert trajectories["reasons"] == {"llm_error": 1, "dialogue_turn_dropped": 4}
    assert (trajectories["made"], trajectories["errors"]) == (5, 5)
    # one retry (max_retries=1), as configured; no later stage asked the endpoint anything
    assert len(server.chat_requests) == 2
    assert build.stage("queries").status == "pending"
