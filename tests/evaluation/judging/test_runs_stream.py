"""A judge run keeps its window of prompts full against a real local server: rate limits (429 and 503
with Retry-After) lose and repeat nothing, and one slow prompt holds back no other."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter

import pytest

from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.runs import run_judge_run, start_judge_run
from evaluation.outputs.models import System
from tests.evaluation.judging_support import (
    BenchmarkItemFactory,
    good_answer,
    prompt_key,
    rubric_judge,
    stage_of,
)
from tests.factories import ModelOutputFactory
from tests.support.fake_chat_server import (
    RecordedRequest,
    Reply,
    json_reply,
    running_chat_server,
    status_reply,
)
from webapp.jobs import JobReporter, run_job
from webapp.models import Job, JobStatus

pytestmark = pytest.mark.usefixtures("media_root")

STAGES_PER_OUTPUT = 4  # perception, reasoning, response content, response audio


@pytest.fixture
def system(db: None) -> System:
    system = System.objects.create(name="Omni-X")
    for number in range(10):
        ModelOutputFactory.create(
            system=system, item=BenchmarkItemFactory.create(external_id=f"EE-{number:02d}")
        )
    return system


def _run(system: System, base_url: str, max_concurrency: int) -> Job:
    config = JudgeConfig.objects.create(
        name="judge",
        base_url=base_url,
        model="judge-model",
        attach_audio=True,
        max_concurrency=max_concurrency,
    )
    run = start_judge_run(system, "echoeval-v1", config, started_by=None)
    assert run.job is not None
    run_job(run.job.pk)
    run.job.refresh_from_db()
    assert run.job.status == JobStatus.SUCCEEDED, run.job.error
    return run.job


class RateLimitingJudge:
    """Answers well, but tells about one prompt in five to come back later (429, or 503) on first asking."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.refused = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        key = prompt_key(request)
        with self._lock:
            self.seen[key] += 1
            first_time = self.seen[key] == 1
            limited = first_time and hashlib.sha256(key.encode()).digest()[0] % 5 == 0
            if limited:
                self.refused += 1
                status = 429 if self.refused % 2 else 503
                return status_reply(status, retry_after=0.05)
            self.answered[key] += 1
        return json_reply(good_answer(stage_of(request)), delay_s=0.02)


def test_rate_limited_prompts_are_retried_and_every_stage_is_judged_exactly_once(system: System) -> None:
    judge = RateLimitingJudge()
    with running_chat_server(judge) as server:
        job = _run(system, server.base_url, max_concurrency=4)
    expected = 10 * STAGES_PER_OUTPUT
    assert judge.refused >= 4  # the server did push back
    # Each prompt got exactly one answer from the server, and each (output, stage) one row.
    assert len(judge.answered) == expected
    assert set(judge.answered.values()) == {1}
    rows = Counter(Judgement.objects.filter(output__system=system).values_list("output_id", "stage"))
    assert len(rows) == expected
    assert set(rows.values()) == {1}
    assert Judgement.objects.filter(score__isnull=True).count() == 0
    assert job.result is not None
    assert (job.result["valid"], job.result["unreachable"], job.result["already_judged"]) == (expected, 0, 0)
    assert server.max_in_flight <= 4
    assert "per minute" in job.log


class RecordingReporter(JobReporter):
    """Keeps the progress messages a run reports (the job row keeps only the last)."""

    def __init__(self, job: Job) -> None:
        super().__init__(job)
        self.messages: list[str] = []

    def progress(self, fraction: float, message: str = "", *, force: bool = False) -> None:
        self.messages.append(message)
        super().progress(fraction, message, force=True)


def test_the_run_reports_judgements_per_minute_and_the_time_left(system: System) -> None:
    with running_chat_server(rubric_judge(delay_s=0.02)) as server:
        config = JudgeConfig.objects.create(
            name="judge", base_url=server.base_url, model="judge-model", attach_audio=True
        )
        run = start_judge_run(system, "echoeval-v1", config, started_by=None)
        assert run.job is not None
        reporter = RecordingReporter(run.job)
        run_judge_run(run.pk, reporter)
    during = [message for message in reporter.messages if message.startswith("Judged ") and " of " in message]
    # Answers that arrive together are stored and reported together: the count only grows.
    judged = [int(re.match(r"Judged (\d+) of 40 stages", message).group(1)) for message in during]  # type: ignore[union-attr]
    assert judged == sorted(set(judged)) and judged[-1] == 40
    assert all(
        re.search(r" · [\d,]+ per minute, (under a minute|about \d+ min) left$", message)
        for message in during
    )
