"""Paper scale (issue 46): a build export and a training-records export at 40K and 400K records,
each in a fresh process, with its peak memory; memory must stay flat as N grows.

    nice .venv/bin/python bench/paper_scale.py [--sizes 40000 400000]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio nice .venv/bin/python bench/paper_scale.py

SQLite by default (a throwaway file per size); with a PostgreSQL DATABASE_URL, a throwaway database
"bench_paper_scale" on the same server, dropped afterwards. Per size, three processes:

- populate: a finished single-turn build of N samples (bulk_create in chunks, one short WAV shared
  by every sample), so the export reads N rows and writes N records and 2N WAVs;
- build export: ``ml.builder.export.export_build`` (what the builder_export job runs), which
  reads the samples with ``.iterator(chunk_size=...)``;
- records export: ``ml.core.training_records.export_records`` fed an iterator of N records,
  as ``ml.jobs.datasets.export_snapshot`` feeds it a studio snapshot one record at a time.

With ``--workers-build N`` (PostgreSQL only: claims need ``SKIP LOCKED``) it instead runs one
build of N single-turn samples against the scripted test LLM (``tests.support.builder_llm``) and
eSpeak NG with 1 worker process (1 shard) and again with 2 (2 shards). Each process does what a
Celery worker does (takes queued jobs, ``webapp.jobs.run_job``) and logs every sample each stage
finished through ``ml.builder.claims.finish_unit``; printed: wall seconds, the speed-up, and the
exactly-once check (no sample finished twice by any stage, every kept sample finished once per stage).

Each export process prints its wall seconds, records per second and peak resident memory
(``ru_maxrss``, taken after Django is set up and again at the end, so the growth is the export's).
Progress goes to stderr every 10%.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BENCH_DATABASE = "bench_paper_scale"
CHUNK = 5000


def peak_mib() -> float:
    """Return this process's peak resident memory so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _setup() -> None:
    import logging

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    logging.disable(logging.WARNING)
    django.setup()


def _progress(label: str, done: int, total: int) -> None:
    if total and (done == total or done % max(1, total // 10) == 0):
        print(f"  {label}: {done:,}/{total:,} ({done / total:.0%})", file=sys.stderr, flush=True)


def populate(size: int) -> dict[str, Any]:
    """Make a finished build of `size` single-turn samples in chunks; return what was made."""
    _setup()
    import numpy as np
    from django.core.management import call_command

    from annotation.audio.synthesis import to_wav_bytes
    from ml.builder.models import Build, BuildSample, BuildStatus, SampleStage
    from ml.builder.stages import SAMPLE_STAGES
    from tests.ml.builder.pages.spotcheck_builds import CONFIG, OUTPUT, TOM, make_stages, perception
    from webapp.storage import save_media

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    build = Build.objects.create(
        name="paper scale", status=BuildStatus.SUCCEEDED, single_turn_count=size, config=dict(CONFIG)
    )
    make_stages(build)
    key = save_media("bench/paper-scale.wav", to_wav_bytes(np.zeros(800, dtype=np.int16), 16000))
    made = 0
    while made < size:
        count = min(CHUNK, size - made)
        samples = BuildSample.objects.bulk_create(
            BuildSample(
                build=build,
                external_id=f"S-{made + n + 1}",
                emotion="sad",
                intensity="medium",
                prompt_variant="standard",
                text=f"I really thought I would get the promotion this time, number {made + n + 1}.",
                perception=perception(),
                tom=dict(TOM),
                strategies=["emotional-validation"],
                speech_style="comforting",
                output=OUTPUT,
                response="That sounds really hard.",
                user_audio_key=key,
                response_audio_key=key,
            )
            for n in range(count)
        )
        if samples[0].pk is None:  # SQLite before RETURNING: read the ids back
            samples = list(BuildSample.objects.filter(build=build).order_by("id")[made : made + count])
        SampleStage.objects.bulk_create(
            SampleStage(build=build, sample=sample, stage=SAMPLE_STAGES[-1], status="done", outcome="kept")
            for sample in samples
        )
        made += count
        _progress("populate", made, size)
    return {"build": build.pk, "seconds": time.perf_counter() - started}


def build_export(build_id: int, folder: str) -> dict[str, Any]:
    """Export the build into `folder` in this process; return seconds and memory."""
    _setup()
    from ml.builder.export import export_build
    from ml.builder.models import Build

    build = Build.objects.get(pk=build_id)
    before = peak_mib()
    started = time.perf_counter()
    counts = export_build(build, Path(folder))
    return {
        "records": counts["single_turn"] + counts["dialogue_turns"],
        "seconds": time.perf_counter() - started,
        "peak_mib_before": before,
        "peak_mib": peak_mib(),
    }


def records_export(size: int, folder: str) -> dict[str, Any]:
    """Write `size` training records from an iterator, as a snapshot export does; return figures."""
    _setup()
    import numpy as np

    from ml.core.training_records import RecordAudio, export_records, record_from_gold
    from tests.ml.builder.pages.spotcheck_builds import TOM, perception

    audio = np.zeros(800, dtype=np.float32)
    names = {"emotional-validation": "Emotional validation"}

    def rows() -> Any:
        for n in range(1, size + 1):
            record = record_from_gold(
                f"EE-{n}", f"Take {n}.", "implicit", "sad", perception(), TOM, "That sounds hard.", names
            )
            yield RecordAudio(record, audio, 16000)
            _progress("records export", n, size)

    # The first record imports the reward ladder (torch): a one-off cost, not the export's growth.
    record_from_gold("EE-0", "Take.", "implicit", "sad", perception(), TOM, "Hard.", names)
    before = peak_mib()
    started = time.perf_counter()
    records_file = export_records(rows(), Path(folder))
    lines = sum(1 for _ in records_file.open(encoding="utf-8"))
    return {
        "records": lines,
        "seconds": time.perf_counter() - started,
        "peak_mib_before": before,
        "peak_mib": peak_mib(),
    }


def _worker(log_path: str, build_id: int) -> None:
    """Work like one Celery worker until the build ends, logging each (stage, sample) it finished."""
    _setup()
    import webapp.jobs
    from ml.builder import claims
    from ml.builder.models import Build, BuildStatus
    from webapp.jobs import run_job
    from webapp.models import Job, JobStatus

    webapp.jobs.enqueue = lambda job: True  # the jobs wait as rows; the worker processes take them
    finish = claims.finish_unit

    def logged_finish(job: Any, rows: Any, results: Any) -> None:
        finish(job, rows, results)
        with Path(log_path).open("a", encoding="utf-8") as log:
            log.writelines(f"{row.stage}\t{row.sample_id}\n" for row in rows)

    claims.finish_unit = logged_finish
    while Build.objects.filter(pk=build_id, status=BuildStatus.RUNNING).exists():
        job = Job.objects.filter(status=JobStatus.QUEUED).order_by("id").first()
        if job is None:
            time.sleep(0.2)  # the other worker holds the last job of a stage
            continue
        run_job(job.pk)


def _serve_llm(ready: Any, stop: Any) -> None:
    from bench.builder import _serve_test_llm

    _serve_test_llm(ready, stop)


def workers_build(size: int) -> None:
    """Run the same build on 1 and 2 worker processes; print wall time, speed-up, exactly-once."""
    import multiprocessing
    from collections import Counter

    from bench.servers import postgres_urls, throwaway_database

    server_url, database_url = postgres_urls(BENCH_DATABASE)
    os.environ["DATABASE_URL"] = database_url
    scratch = tempfile.mkdtemp(prefix="bench-paper-workers-")
    os.environ.update(ECHOSTUDIO_VAR_DIR=f"{scratch}/var", ECHOSTUDIO_MEDIA_ROOT=f"{scratch}/media")
    os.environ["ECHOSTUDIO_OUTBOUND_ALLOW_INTERNAL_HOSTS"] = "1"  # the scripted LLM listens on 127.0.0.1
    context = multiprocessing.get_context("spawn")
    with throwaway_database(server_url, BENCH_DATABASE):
        _setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        import webapp.jobs
        from ml.builder.models import Build, BuildSample, SampleStatus
        from ml.builder.runner import start_build
        from ml.builder.stages import SAMPLE_STAGES
        from tests.ml.builder.support import build_config, make_taxonomy

        webapp.jobs.enqueue = lambda job: True
        make_taxonomy()
        ready, stop = context.Queue(), context.Event()
        llm = context.Process(target=_serve_llm, args=(ready, stop), daemon=True)
        llm.start()
        base_url = ready.get(timeout=60)
        print(f"builder, {size} single-turn samples; cores {os.cpu_count()}, load average {os.getloadavg()}")
        print(
            f"{'workers':>8} {'wall s':>8} {'samples/s':>10} {'speed-up':>9} {'finished twice':>15} {'kept':>6}"
        )
        first = 0.0
        try:
            for workers in (1, 2):
                build = Build.objects.create(
                    name=f"workers {workers}",
                    single_turn_count=size,
                    dialogue_count=0,
                    seed=1,
                    config=build_config(base_url, batch_size=10, audio_threads=1, shards=workers),
                )
                logs = [f"{scratch}/finished-{workers}-{n}.tsv" for n in range(workers)]
                started = time.perf_counter()
                start_build(build)
                processes = [context.Process(target=_worker, args=(log, build.pk)) for log in logs]
                for process in processes:
                    process.start()
                for process in processes:
                    process.join()
                wall = time.perf_counter() - started
                first = first or wall
                build.refresh_from_db()
                if build.status != "succeeded":
                    from ml.builder.models import BuildStage

                    for row in BuildStage.objects.filter(build=build).order_by("id"):
                        print(f"  {row.stage}: {row.status} {row.counts} {row.job.error if row.job else ''}")
                finished: Counter[str] = Counter()
                for log in logs:
                    if Path(log).exists():
                        finished.update(Path(log).read_text(encoding="utf-8").splitlines())
                twice = sum(1 for count in finished.values() if count > 1)
                kept = BuildSample.objects.filter(build=build, status=SampleStatus.ACTIVE).values_list(
                    "pk", flat=True
                )
                unfinished = sum(f"{SAMPLE_STAGES[-1]}\t{pk}" not in finished for pk in kept)
                print(
                    f"{workers:>8} {wall:>8.1f} {size / wall:>10.2f} {first / wall:>8.2f}x {twice:>15} {len(kept):>6}"
                    f"  build {build.status}; kept samples the last stage never finished: {unfinished}",
                    flush=True,
                )
        finally:
            stop.set()
            llm.join(timeout=10)
    print(f"load average after: {os.getloadavg()}")


def _child(env: dict[str, str], *args: str) -> dict[str, Any]:
    """Run one step of this script in a fresh process; return the JSON it prints last."""
    done = subprocess.run(
        [sys.executable, __file__, "--step", *args], env=env, check=True, stdout=subprocess.PIPE, text=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _row(label: str, size: int, figures: dict[str, Any]) -> str:
    rate = figures["records"] / figures["seconds"] if figures["seconds"] else 0.0
    return (
        f"{label:<15} {size:>9,} {figures['records']:>9,} {figures['seconds']:>9.1f} {rate:>9.0f}"
        f" {figures['peak_mib_before']:>10.1f} {figures['peak_mib']:>9.1f}"
        f" {figures['peak_mib'] - figures['peak_mib_before']:>8.1f}"
    )


def run(sizes: list[int]) -> None:
    given = os.environ.get("DATABASE_URL", "")
    print(
        f"database: {'PostgreSQL' if given else 'SQLite'}; load average {os.getloadavg()}; cores {os.cpu_count()}"
    )
    print(
        f"{'export':<15} {'N':>9} {'records':>9} {'seconds':>9} {'rec/s':>9} {'MiB setup':>10} {'MiB peak':>9} {'growth':>8}"
    )
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-paper-scale-") as scratch:
            env = {
                **os.environ,
                "ECHOSTUDIO_VAR_DIR": f"{scratch}/var",
                "ECHOSTUDIO_MEDIA_ROOT": f"{scratch}/media",
            }
            if given:
                from bench.servers import postgres_urls, throwaway_database

                server_url, database_url = postgres_urls(BENCH_DATABASE)
                env["DATABASE_URL"] = database_url
                database: AbstractContextManager[None] = throwaway_database(server_url, BENCH_DATABASE)
            else:
                database = nullcontext()
            with database:
                made = _child(env, "populate", str(size))
                print(f"  (populated {size:,} samples in {made['seconds']:.0f} s)", file=sys.stderr)
                print(
                    _row(
                        "build export",
                        size,
                        _child(env, "build_export", str(made["build"]), f"{scratch}/build"),
                    )
                )
                print(
                    _row(
                        "records export", size, _child(env, "records_export", str(size), f"{scratch}/records")
                    )
                )
            sys.stdout.flush()
    print(f"load average after: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[40_000, 400_000])
    parser.add_argument("--workers-build", type=int, metavar="N", help="1 vs 2 builder workers on N samples")
    parser.add_argument("--step", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.workers_build:
        workers_build(options.workers_build)
        return
    if options.step:
        name, *args = options.step
        if name == "populate":
            result = populate(int(args[0]))
        elif name == "build_export":
            result = build_export(int(args[0]), args[1])
        else:
            result = records_export(int(args[0]), args[1])
        print(json.dumps(result))
        return
    run(options.sizes)


if __name__ == "__main__":
    main()
