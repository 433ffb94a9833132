"""Endpoint inference of N takes against a local stub with `input_audio`, a fixed latency and a
concurrency limit.

    nice .venv/bin/python bench/endpoint_inference.py [--takes 200] [--latency-ms 200] [--limit 8]

The stub is bench/judge_throughput.py's (a real OpenAI-compatible server on 127.0.0.1 in its own
process, `--limit` requests at once, each `--latency-ms`; over the limit it answers 429 with
Retry-After), answering each take with a text named after its audio's PCM checksum. Two runs of the
job function (the snapshot's takes read from storage, the judges' client and cache, the import)
in Django's throwaway test database (SQLite or PostgreSQL, from DATABASE_URL):

1. a clean stub: takes answered per second as a share of the stub's capacity, the peak in flight;
2. the stub answering 429/503 with Retry-After to 20% of requests: every take answered exactly once
   at the stub, one output per take in the database, each exactly the stub's answer to its audio.

The responses are voiced by a silent stand-in: the TTS is not what is measured.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ["ECHOSTUDIO_OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
django.setup()

import numpy as np
from django.db import connection
from django.test.utils import setup_test_environment

from bench.judge_throughput import stub_process
from evaluation.outputs.models import ModelOutput
from ml.jobs import endpoint_inference
from ml.jobs.datasets import create_snapshot
from ml.jobs.launch import ENDPOINT_INFERENCE_JOB
from ml.jobs.models import DatasetSnapshot
from tests.ml.jobs.endpoint_support import sent_audio, take_digests
from tests.ml.jobs.support import TrainingItemFactory
from tests.support.fake_chat_server import RecordedRequest, Reply, chat_reply
from webapp.jobs import run_job
from webapp.lib import vocabulary
from webapp.models import Job


def answer_take(request: RecordedRequest) -> tuple[str, Reply]:
    """Answer a take with a text named after its audio (the last message's clip)."""
    body: Any = request.json
    digest = sent_audio(body["messages"][-1])[0]
    return digest, chat_reply(f"Answer to {digest}.")


def run(snapshot: DatasetSnapshot, model: str, base_url: str, limit: int) -> tuple[Job, float]:
    job = Job.objects.create(
        kind=ENDPOINT_INFERENCE_JOB,
        queue="default",
        parameters={
            "endpoint_url": base_url,
            "model": model,
            "system_name": f"bench {model}",
            "max_concurrency": limit,
            "dataset_snapshot": snapshot.pk,
            "splits": [vocabulary.TEST],
        },
    )
    started = time.perf_counter()
    run_job(job.pk)
    elapsed = time.perf_counter() - started
    job.refresh_from_db()
    return job, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--takes", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--limit", type=int, default=8)
    args = parser.parse_args()
    latency_s = args.latency_ms / 1000
    capacity = args.limit / latency_s
    endpoint_inference.configured_synthesizer = lambda: lambda text, style: (np.zeros(160, np.int16), 16_000)
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        for number in range(args.takes):
            TrainingItemFactory.create(
                external_id=f"EE-{number:05d}", split=vocabulary.TEST, pitch_hz=90.0 + number, with_gold=False
            )
        digests = take_digests()
        snapshot = create_snapshot(DatasetSnapshot.Purpose.INFERENCE, [vocabulary.TEST])
        print(
            f"{args.takes} takes ({len(digests)} distinct audio) on {connection.vendor}; stub: {args.limit} at once, "
            f"{args.latency_ms:g} ms each = {capacity:.0f} requests/s; load {os.getloadavg()[0]:.2f}"
        )
        for label, model, share in (("clean", "bench-omni", 0.0), ("20% refused", "bench-omni-2", 0.2)):
            with stub_process(args.limit, latency_s, share, answer_take) as (base_url, figures):
                job, elapsed = run(snapshot, model, base_url, args.limit)
            stub = figures[0]
            assert job.result is not None, job.error
            per_minute = float(job.result["per_minute"] or 0)
            outputs = Counter(
                ModelOutput.objects.filter(system__name=f"bench {model}").values_list(
                    "item__external_id", flat=True
                )
            )
            exact = sum(
                1
                for output in ModelOutput.objects.filter(system__name=f"bench {model}").select_related("item")
                if output.raw_text
                == f"Answer to {next(d for d, item in digests.items() if item == output.item.external_id)}."
            )
            once = len(stub.answered) == args.takes and set(stub.answered.values()) == {1}
            print(
                f"{label}: {per_minute:,.0f} takes per minute while answering = {100 * per_minute / 60 / capacity:.1f}% "
                f"of the stub's capacity; job {elapsed:.1f} s in all (snapshot read, voicing, import); "
                f"{stub.requests} requests, {stub.refused} refused 429/503, {stub.over_limit} over the limit, "
                f"peak in flight {stub.peak_in_flight}; {len(stub.answered)} takes answered at the stub, "
                f"exactly once: {'yes' if once else 'NO'}; {len(outputs)} outputs, {exact} equal to the stub's answer"
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
