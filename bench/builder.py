"""The EchoDialogue builder at 1,000 and 10,000 samples: samples per second per stage, and memory (issue 17).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio nice .venv/bin/python bench/builder.py [1000 10000]

A throwaway database "bench_builder" is made next to the one DATABASE_URL names (dropped
afterwards). Each size is one build (single-turn samples, plus one five-turn dialogue per 100
samples) against the scripted test LLM (``tests.support.builder_llm`` on a local HTTP server in a process of its own,
two models) and eSpeak NG, run stage by stage in this process through the same Job runner and claims a
Celery worker uses (one shard: the figures are one worker's). Printed per stage: samples made,
wall seconds, samples per second, LLM calls and tokens; and the process's peak resident memory
after each stage. Memory must stay flat from 1,000 to 10,000: nothing holds a build in memory.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.servers import postgres_urls, throwaway_database

BENCH_DATABASE = "bench_builder"
SERVER_URL, DATABASE_URL = postgres_urls(BENCH_DATABASE)
os.environ["DATABASE_URL"] = DATABASE_URL
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
MEDIA = Path(tempfile.mkdtemp(prefix="bench-builder-media-"))
os.environ["ECHOSTUDIO_MEDIA_ROOT"] = str(MEDIA)
os.environ["ECHOSTUDIO_VAR_DIR"] = str(MEDIA / "var")
logging.disable(logging.WARNING)


def _serve_test_llm(ready: Any, stop: Any) -> None:
    """Serve the scripted test LLM in its own process, so its request log is not the builder's memory."""
    from tests.support.builder_llm import builder_responder
    from tests.support.fake_chat_server import running_chat_server

    with running_chat_server(builder_responder()) as server:
        server.record = lambda request: None  # type: ignore[method-assign]
        server.finish = lambda: None  # type: ignore[method-assign]
        ready.put(server.base_url)
        stop.wait()


def peak_mib() -> float:
    """Return this process's peak resident memory so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(sizes: list[int]) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    import webapp.jobs
    from ml.builder.models import Build
    from ml.builder.runner import start_build
    from ml.builder.stages import SAMPLE_STAGES
    from tests.ml.builder.support import build_config, make_taxonomy
    from webapp.jobs import run_job
    from webapp.models import Job, JobStatus

    webapp.jobs.enqueue = lambda job: True  # jobs run here, one after another, as one worker would
    make_taxonomy()
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    llm = context.Process(target=_serve_test_llm, args=(ready, stop), daemon=True)
    llm.start()
    base_url = ready.get(timeout=60)
    try:
        for size in sizes:
            build = Build.objects.create(
                name=f"bench {size}",
                single_turn_count=size,
                dialogue_count=max(1, size // 100),
                seed=1,
                config=build_config(base_url, batch_size=50, audio_threads=2),
            )
            started = time.monotonic()
            start_build(build)
            print(f"\n{size} single-turn samples + {build.dialogue_count} five-turn dialogues")
            print(
                f"{'stage':<16}{'made':>7}{'kept':>7}{'wall s':>9}{'samples/s':>11}{'LLM calls':>11}{'tokens':>10}{'peak MiB':>10}"
            )
            done: set[str] = set()
            while job := Job.objects.filter(status=JobStatus.QUEUED).order_by("id").first():
                run_job(job.pk)
                job.refresh_from_db()
                if job.status != JobStatus.SUCCEEDED:
                    raise SystemExit(f"{job} ended {job.status}: {job.error}")
                stage = job.parameters.get("stage", "")
                if stage in SAMPLE_STAGES and stage not in done:
                    done.add(stage)
                    row = build.stage(stage)
                    cost, counts = row.cost, row.counts
                    tokens = cost.get("prompt_tokens", 0) + cost.get("completion_tokens", 0)
                    print(
                        f"{stage:<16}{counts['made']:>7}{counts['kept']:>7}{cost['wall_seconds']:>9.1f}"
                        f"{cost['samples_per_second']:>11.1f}{cost['llm_calls']:>11}{tokens:>10}{peak_mib():>10.0f}",
                        flush=True,
                    )
            build.refresh_from_db()
            print(
                f"whole build: {time.monotonic() - started:.0f} s, status {build.status}, exported to {build.export_path}"
            )
            print(f"peak resident memory after {size}: {peak_mib():.0f} MiB", flush=True)
    finally:
        stop.set()
        llm.join(timeout=10)


def main() -> None:
    sizes = [int(arg) for arg in sys.argv[1:]] or [1000, 10000]
    with throwaway_database(SERVER_URL, BENCH_DATABASE):
        run(sizes)


if __name__ == "__main__":
    main()
