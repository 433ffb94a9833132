"""A judge run of 1,000 outputs against a local stub judge with a fixed latency and a concurrency limit.

    nice .venv/bin/python bench/judge_throughput.py [--outputs 1000] [--latency-ms 200] [--limit 16]

The stub is a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/support/fake_chat_server.py)
that serves at most `--limit` requests at once, each taking `--latency-ms` (a request beyond the
limit is answered 429 with Retry-After): its capacity is limit / latency requests per second.
The judge configuration's `max_concurrency` is the same limit. Two real judge runs (the job
function, the database, the judge cache, the client) go through Django's throwaway test database
(SQLite or PostgreSQL, from DATABASE_URL):

1. a clean stub: judgements per second as a share of the stub's capacity (goal >= 90%), and the
   peak number of requests the stub saw in flight;
2. the stub answering 429 with Retry-After (alternating with 503) to 20% of the requests: the
   exactly-once check, counting at the stub the answered requests per prompt and in the database
   the judgements per (output, stage).

Each output of a text-only system is judged on three stages, so 1,000 outputs are 3,000 prompts.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# The stub listens on the loopback address, which the outbound policy refuses unless named.
os.environ["ECHOSTUDIO_OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
django.setup()

from django.db import connection
from django.test.utils import setup_test_environment

from annotation.gold.models import GoldReference
from annotation.recording.models import Item
from evaluation.judging.models import JudgeConfig, Judgement, JudgeRun
from evaluation.outputs.models import ModelOutput, System
from tests.evaluation.judging_support import GOLD_PERCEPTION, GOLD_TOM, good_answer, prompt_key, stage_of
from tests.support.fake_chat_server import (
    RecordedRequest,
    Reply,
    json_reply,
    running_chat_server,
    status_reply,
)
from webapp.jobs import run_job
from webapp.models import Job


def judge_answer(request: RecordedRequest) -> tuple[str, Reply]:
    """Return a judge's good answer to the request's stage, keyed by its prompt."""
    return prompt_key(request), json_reply(good_answer(stage_of(request)))


# What the stub answers a request it serves: (the request's key, counted per key; the reply).
Answer = Callable[[RecordedRequest], tuple[str, Reply]]


class LimitedStub:
    """An endpoint that serves `limit` requests at once, each in `latency_s`; refuses a share of
    requests. `answer` says what it answers (a judge's by default; bench/endpoint_inference.py a system's)."""

    def __init__(
        self, limit: int, latency_s: float, refuse_share: float, answer: Answer = judge_answer
    ) -> None:
        self.answer = answer
        self.slots = threading.BoundedSemaphore(limit)
        self.latency_s = latency_s
        self.refuse_share = refuse_share
        self.rng = random.Random(0)
        self.lock = threading.Lock()
        self.answered: Counter[str] = Counter()
        self.refused = 0
        self.over_limit = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        with self.lock:
            refuse = self.rng.random() < self.refuse_share
            if refuse:
                self.refused += 1
                return status_reply(429 if self.refused % 2 else 503, retry_after=self.latency_s)
        if not self.slots.acquire(blocking=False):
            with self.lock:
                self.over_limit += 1
            return status_reply(429, retry_after=self.latency_s)
        try:
            time.sleep(self.latency_s)  # the model's time on the stub's own slot
        finally:
            self.slots.release()
        key, reply = self.answer(request)
        with self.lock:
            self.answered[key] += 1
        return reply


@dataclass
class StubFigures:
    answered: Counter[str]  # answered requests per prompt
    refused: int
    over_limit: int
    peak_in_flight: int
    requests: int


def _serve(limit: int, latency_s: float, refuse_share: float, answer: Answer, pipe: Connection) -> None:
    """Run the stub in its own process (its threads must not share the judge run's interpreter lock)."""
    stub = LimitedStub(limit, latency_s, refuse_share, answer)
    with running_chat_server(stub) as server:
        pipe.send(server.base_url)
        pipe.recv()  # until the run is over
        figures = StubFigures(
            stub.answered, stub.refused, stub.over_limit, server.max_in_flight, len(server.chat_requests)
        )
    pipe.send(figures)


@contextmanager
def stub_process(
    limit: int, latency_s: float, refuse_share: float, answer: Answer = judge_answer
) -> Iterator[tuple[str, list[StubFigures]]]:
    """Yield the stub's base URL and a list that holds its figures once the block ends."""
    here, there = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(
        target=_serve, args=(limit, latency_s, refuse_share, answer, there), daemon=True
    )
    process.start()
    figures: list[StubFigures] = []
    try:
        yield here.recv(), figures
    finally:
        here.send("stop")
        figures.append(here.recv())
        process.join(timeout=10)


def fill(n_outputs: int) -> System:
    items = Item.objects.bulk_create(
        Item(external_id=f"EE-{n:05d}", text=f"utterance {n}", scenario="implicit", target_emotion="sad")
        for n in range(n_outputs)
    )
    GoldReference.objects.bulk_create(
        GoldReference(item=item, version=1, is_current=True, perception=GOLD_PERCEPTION, tom=GOLD_TOM)
        for item in items
    )
    system = System.objects.create(name="bench system", text_only=True)
    ModelOutput.objects.bulk_create(
        ModelOutput(
            system=system,
            item=item,
            benchmark_version="echoeval-v1",
            perception_text=f"The user sounds sad ({item.external_id}).",
            reasoning_text="Context: alone\nLatent need: company\nCore demand: be heard",
            reasoning_fields={"context": "alone", "latent_need": "company", "core_demand": "be heard"},
            strategy_text="Strategies: emotional validation",
            response_text="I'm sorry you ate alone. Want to talk?",
        )
        for item in items
    )
    return system


def judge_run(system: System, name: str, model: str, base_url: str, limit: int) -> tuple[Job, float]:
    config = JudgeConfig.objects.create(name=name, base_url=base_url, model=model, max_concurrency=limit)
    run = JudgeRun.objects.create(system=system, benchmark_version="echoeval-v1", judge_config=config)
    run.job = Job.objects.create(kind="judge_run", queue="default", parameters={"judge_run_id": run.pk})
    run.save(update_fields=["job"])
    started, cpu_started = time.perf_counter(), time.process_time()
    run_job(run.job.pk)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    run.job.refresh_from_db()
    judged = Judgement.objects.filter(judge_config=config).count()
    # On a shared machine the run can be short of CPU rather than of the stub's answers.
    print(f"  {name}: {1000 * cpu / max(1, judged):.1f} ms of this process's CPU per judgement")
    return run.job, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--outputs", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--limit", type=int, default=16)
    args = parser.parse_args()
    latency_s = args.latency_ms / 1000
    capacity = args.limit / latency_s
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        system = fill(args.outputs)
        print(
            f"{args.outputs} outputs x 3 stages on {connection.vendor}; stub: {args.limit} at once, "
            f"{args.latency_ms:g} ms each = {capacity:.0f} requests/s; load {os.getloadavg()[0]:.2f}"
        )
        with stub_process(args.limit, latency_s, 0.0) as (base_url, clean_figures):
            job, elapsed = judge_run(system, "clean judge", "bench-judge", base_url, args.limit)
        clean = clean_figures[0]
        assert job.result is not None, job.error
        judged = job.result["valid"] + job.result["judge_errors"]
        rate = judged / elapsed
        print(
            f"clean: {judged} judgements in {elapsed:.1f} s = {rate:.1f}/s ({rate * 60:,.0f} per minute), "
            f"{100 * rate / capacity:.1f}% of the stub's capacity (goal >= 90%); peak in flight "
            f"{clean.peak_in_flight}, over the limit {clean.over_limit}"
        )

        # Another judge model: the first run's answers in the cache must not answer this run.
        with stub_process(args.limit, latency_s, 0.2) as (base_url, limited_figures):
            job, elapsed = judge_run(system, "rate-limited judge", "bench-judge-2", base_url, args.limit)
        limited = limited_figures[0]
        assert job.result is not None, job.error
        rows = Counter(
            Judgement.objects.filter(judge_config__name="rate-limited judge").values_list(
                "output_id", "stage"
            )
        )
        expected = 3 * args.outputs
        answered_once = sum(1 for count in limited.answered.values() if count == 1)
        print(
            f"20% refused: {limited.requests} requests, {limited.refused} answered 429/503 with Retry-After; "
            f"{len(limited.answered)} of {expected} prompts answered, {answered_once} exactly once at the stub; "
            f"{len(rows)} judged (output, stage) pairs in the database, {sum(1 for n in rows.values() if n == 1)} "
            f"exactly once; unreachable {job.result['unreachable']}; {job.result['valid'] / elapsed:.1f}/s "
            f"in {elapsed:.1f} s"
        )
        ok = len(rows) == expected and set(rows.values()) == {1} and answered_once == expected
        print("exactly once: " + ("yes" if ok else "NO"))
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
