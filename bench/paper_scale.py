"""Paper scale (issue 46): a build export and a training-records export at 40K and 400K records,
each in a fresh process, with its peak memory; memory must stay flat as N grows.

    nice .venv/bin/python bench/paper_scale.py [--sizes 40000 400000] [--formats jsonl arrow] [--no-build-export]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio nice .venv/bin/python bench/paper_scale.py

SQLite by default (a throwaway file per size); with a PostgreSQL DATABASE_URL, a throwaway database
"bench_paper_scale" on the same server, dropped afterwards. Per size, three processes:

- populate: a finished single-turn build of N samples (bulk_create in chunks, one short WAV shared
  by every sample), so the export reads N rows and writes N records and 2N WAVs;
- build export: ``ml.builder.export.export_build`` (what the builder_export job runs), which
  reads the samples with ``.iterator(chunk_size=...)``;
- records export: ``ml.core.training_records.export_records`` fed an iterator of N records,
  as ``ml.jobs.datasets.export_snapshot`` feeds it a studio snapshot one record at a time, as
  records.jsonl and as records.arrow (Arrow record batches; ``--formats jsonl arrow``), each then
  read back record by record (``iter_records``) in a process of its own.
  ``--no-build-export`` leaves out the populate and build export steps.

With ``--workers-build N`` (PostgreSQL only: claims need ``SKIP LOCKED``) it instead runs one
build of N single-turn samples against the scripted test LLM (``tests.support.builder_llm``) and
eSpeak NG with 1 worker process (1 shard) and again with 2 (2 shards). Each process does what a
Celery worker does (takes queued jobs, ``webapp.jobs.run_job``) and logs every sample each stage
finished through ``ml.builder.claims.finish_units``. The two are interleaved, ``--rounds`` times each
(default 3). Each worker first warms up (``audio_steps.warm_up``: SciPy and the speech models, what
a long-running Celery worker loaded long ago; ``--cold`` leaves it out), and the clock starts when
every worker is up. Printed per run: the 1-minute load average, the warm-up, wall seconds of the
build, of its audio (CPU-bound) stages and of its LLM stages, the seconds the workers spent in the
claims' database bookkeeping (``ensure_rows``, ``claim_batch``, ``finish_units``, progress), in the
audio steps, their CPU, and the audio stages' critical path in CPU (per stage, the busiest worker's
CPU seconds: what a worker with a core of its own would take); then the medians and speed-ups, and
the exactly-once check (no sample finished twice by any stage, every kept sample finished once per
stage). ``PAPER_SCALE_PROFILE=<folder>`` keeps the runs' logs there and a cProfile of each worker's
main thread.

Each export process prints its wall seconds, records per second and peak resident memory
(``ru_maxrss``, taken after Django is set up and again at the end, so the growth is the export's).
Progress goes to stderr every 10%.
"""

from __future__ import annotations

import argparse
import itertools
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


def records_export(size: int, folder: str, records_format: str = "jsonl") -> dict[str, Any]:
    """Write `size` training records from an iterator, as a snapshot export does, as JSONL or
    Arrow (record batches); return figures."""
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
    # So is the writer's first batch (pyarrow's import and first conversion: about 80 MiB and a
    # second or more, once per process): one record written to a scratch folder first.
    with tempfile.TemporaryDirectory() as warm:
        first = record_from_gold("EE-0", "Take.", "implicit", "sad", perception(), TOM, "Hard.", names)
        export_records([RecordAudio(first, audio, 16000)], Path(warm), records_format=records_format)
    before = peak_mib()
    started = time.perf_counter()
    export_records(rows(), Path(folder), records_format=records_format)
    return {
        "records": size,
        "seconds": time.perf_counter() - started,
        "peak_mib_before": before,
        "peak_mib": peak_mib(),
    }


def records_read(folder: str, records_format: str) -> dict[str, Any]:
    """Read back an export of `records_export` record by record (`iter_records`: JSONL by line,
    Arrow by record batch), as a training run streams it; return figures."""
    from ml.core.training_records import RECORD_FORMATS, iter_records

    records = iter_records(Path(folder) / RECORD_FORMATS[records_format])
    count = sum(1 for _ in itertools.islice(records, 1))  # set-up too: pyarrow's import, the first batch
    before = peak_mib()
    started = time.perf_counter()
    count += sum(1 for _ in records)
    return {
        "records": count,
        "seconds": time.perf_counter() - started,
        "peak_mib_before": before,
        "peak_mib": peak_mib(),
    }


IDLE = "(between jobs)"
BOOKKEEPING = (
    "ensure_rows",
    "release_dead_claims",
    "claim_batch",
    "finish_units",
    "stage_progress",
    "refresh_summary",
)


def _worker(log_path: str, timing_path: str, build_id: int, ready: Any, go: Any, warm: bool) -> None:
    """Work like one Celery worker until the build ends, logging each (stage, sample) it finished
    and, per stage, the seconds it spent in the claims' database bookkeeping and in the steps.

    With `warm` it first loads what the audio stages load on their first sample
    (``audio_steps.warm_up``), as a long-running Celery worker has long done; either way it
    reports ready and waits for `go`, so the build's clock starts with every worker up."""
    _setup()
    from ml.builder.steps.audio_steps import warm_up

    ready.put(warm_up() if warm else 0.0)
    go.wait()
    import threading
    from collections import defaultdict

    from django.db import connection

    import webapp.jobs
    from ml.builder import claims, runner
    from ml.builder.models import Build, BuildStatus
    from webapp.jobs import run_job
    from webapp.models import Job, JobStatus

    webapp.jobs.enqueue = lambda job: True  # the jobs wait as rows; the worker processes take them
    seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    lock = threading.Lock()
    current = {"stage": IDLE}

    # (stage, what, start, end) in seconds since the epoch: each job, bookkeeping call and step, for
    # a timeline of where a stage's wall time goes (kept in the timing file).
    events: list[tuple[str, str, float, float]] = []

    def timed(kind: str, function: Any, name: str = "") -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            started, started_cpu, at = time.perf_counter(), time.thread_time(), time.time()
            try:
                return function(*args, **kwargs)
            finally:
                with lock:
                    seconds[current["stage"]][kind] += time.perf_counter() - started
                    # This thread's own CPU in it: what a loaded machine hardly inflates.
                    seconds[current["stage"]][f"{kind}_cpu"] += time.thread_time() - started_cpu
                    events.append((current["stage"], name or kind, at, time.time()))

        return call

    def counted(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        with lock:
            seconds[current["stage"]]["queries"] += 1
        return execute(sql, params, many, context)

    # Every statement of the main thread (jobs, claims, progress), the pool threads' own aside.
    connection.execute_wrappers.append(counted)

    for name in BOOKKEEPING:
        setattr(claims, name, timed("db", getattr(claims, name), name))
    for stage, step in list(runner.STEPS.items()):
        runner.STEPS[stage] = timed("step", step)
    finish = claims.finish_units

    def logged_finish(job: Any, finished: Any) -> None:
        finish(job, finished)
        with Path(log_path).open("a", encoding="utf-8") as log:
            log.writelines(f"{row.stage}\t{row.sample_id}\n" for rows, _ in finished for row in rows)

    claims.finish_units = logged_finish
    cpu = time.process_time()
    profile = None
    if os.environ.get("PAPER_SCALE_PROFILE"):
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    while Build.objects.filter(pk=build_id, status=BuildStatus.RUNNING).exists():
        job = Job.objects.filter(status=JobStatus.QUEUED).order_by("id").first()
        if job is None:
            time.sleep(0.05)  # the other worker holds the last job of a stage
            continue
        current["stage"] = str(job.parameters.get("stage", ""))
        job_cpu, at = time.process_time(), time.time()
        run_job(job.pk)
        seconds[current["stage"]]["cpu"] += time.process_time() - job_cpu
        events.append((current["stage"], "job", at, time.time()))
        current["stage"] = IDLE  # the polling for the next job is the bench's, not the builder's
    if profile is not None:
        profile.disable()
        profile.dump_stats(f"{timing_path}.prof")
    seconds.pop(IDLE, None)
    figures = {"stages": seconds, "cpu": time.process_time() - cpu, "events": events}
    Path(timing_path).write_text(json.dumps(figures), encoding="utf-8")


def _serve_llm(ready: Any, stop: Any) -> None:
    from bench.builder import _serve_test_llm

    _serve_test_llm(ready, stop)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def workers_build(size: int, rounds: int = 3, *, warm: bool = True) -> None:
    """Run the same build on 1 and 2 worker processes, interleaved, `rounds` times each; print wall
    time, the speed-up of the audio (CPU-bound) stages, of the LLM stages and overall, the
    database bookkeeping's seconds, and the exactly-once check."""
    import multiprocessing
    from collections import Counter

    from bench.servers import postgres_urls, throwaway_database

    server_url, database_url = postgres_urls(BENCH_DATABASE)
    # The given database's name in the throwaway's, so benches on one server do not drop each other's.
    database = f"{BENCH_DATABASE}_{server_url.rsplit('/', 1)[-1]}"
    database_url = f"{database_url.rsplit('/', 1)[0]}/{database}"
    os.environ["DATABASE_URL"] = database_url
    scratch = os.environ.get("PAPER_SCALE_PROFILE") or tempfile.mkdtemp(prefix="bench-paper-workers-")
    os.environ.update(ECHOSTUDIO_VAR_DIR=f"{scratch}/var", ECHOSTUDIO_MEDIA_ROOT=f"{scratch}/media")
    os.environ["ECHOSTUDIO_OUTBOUND_ALLOW_INTERNAL_HOSTS"] = "1"  # the scripted LLM listens on 127.0.0.1
    context = multiprocessing.get_context("spawn")
    with throwaway_database(server_url, database):
        _setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        import webapp.jobs
        from ml.builder.models import Build, BuildSample, BuildStage, SampleStatus
        from ml.builder.runner import start_build
        from ml.builder.stages import AUDIO_STAGES, LLM_STAGES, SAMPLE_STAGES
        from tests.ml.builder.support import build_config, make_taxonomy

        webapp.jobs.enqueue = lambda job: True
        make_taxonomy()
        ready, stop = context.Queue(), context.Event()
        llm = context.Process(target=_serve_llm, args=(ready, stop), daemon=True)
        llm.start()
        base_url = ready.get(timeout=60)
        up = context.Queue()
        print(
            f"builder, {size} single-turn samples; cores {os.cpu_count()}; 1 and 2 workers interleaved;"
            f" workers {'warmed up before the clock' if warm else 'cold'}"
        )
        print(
            f"{'run':>4} {'workers':>8} {'load 1m':>8} {'warm-up s':>9} {'wall s':>7} {'audio s':>8} {'llm s':>7}"
            f" {'db s':>6} {'step s':>7} {'cpu s':>6} {'audio cpu':>9} {'twice':>6} {'kept':>5}"
        )
        figures: dict[int, list[dict[str, float]]] = {1: [], 2: []}
        try:
            for run, workers in itertools.product(range(rounds), (1, 2)):
                build = Build.objects.create(
                    name=f"run {run} workers {workers}",
                    single_turn_count=size,
                    dialogue_count=0,
                    seed=1,
                    config=build_config(base_url, batch_size=10, audio_threads=1, shards=workers),
                )
                logs = [f"{scratch}/finished-{run}-{workers}-{n}.tsv" for n in range(workers)]
                timings = [f"{scratch}/timing-{run}-{workers}-{n}.json" for n in range(workers)]
                go = context.Event()
                processes = [
                    context.Process(target=_worker, args=(log, timing, build.pk, up, go, warm))
                    for log, timing in zip(logs, timings, strict=True)
                ]
                for process in processes:
                    process.start()
                warm_up = max(up.get(timeout=300) for _ in processes)
                load = os.getloadavg()[0]
                started = time.perf_counter()
                start_build(build)
                go.set()
                for process in processes:
                    process.join()
                wall = time.perf_counter() - started
                build.refresh_from_db()
                stage_rows = list(BuildStage.objects.filter(build=build).order_by("id"))
                if build.status != "succeeded":
                    for row in stage_rows:
                        print(f"  {row.stage}: {row.status} {row.counts} {row.job.error if row.job else ''}")

                def stage_wall(stages: Any, rows: list[Any] = stage_rows) -> float:
                    return sum(
                        (row.finished_at - row.started_at).total_seconds()
                        for row in rows
                        if row.stage in stages and row.started_at and row.finished_at
                    )

                spent = [json.loads(Path(timing).read_text(encoding="utf-8")) for timing in timings]
                db = sum(kinds.get("db", 0.0) for one in spent for kinds in one["stages"].values())
                db_cpu = sum(kinds.get("db_cpu", 0.0) for one in spent for kinds in one["stages"].values())
                queries = sum(kinds.get("queries", 0.0) for one in spent for kinds in one["stages"].values())
                step = sum(
                    kinds.get("step", 0.0)
                    for one in spent
                    for stage, kinds in one["stages"].items()
                    if stage in AUDIO_STAGES
                )
                # The CPU-bound stages' critical path in CPU seconds: per stage the busiest worker's
                # CPU (all its threads), which waiting for a loaded machine's cores does not inflate.
                critical = sum(
                    max(float(one["stages"].get(stage, {}).get("cpu", 0.0)) for one in spent)
                    for stage in AUDIO_STAGES
                )
                finished: Counter[str] = Counter()
                for log in logs:
                    if Path(log).exists():
                        finished.update(Path(log).read_text(encoding="utf-8").splitlines())
                twice = sum(1 for count in finished.values() if count > 1)
                kept = BuildSample.objects.filter(build=build, status=SampleStatus.ACTIVE).values_list(
                    "pk", flat=True
                )
                unfinished = sum(f"{SAMPLE_STAGES[-1]}\t{pk}" not in finished for pk in kept)
                one = {
                    "wall": wall,
                    "audio": stage_wall(AUDIO_STAGES),
                    "llm": stage_wall(LLM_STAGES),
                    "db": db,
                    "db_cpu": db_cpu,
                    "queries": queries,
                    "step": step,
                    "cpu": sum(float(one["cpu"]) for one in spent),
                    "critical": critical,
                }
                figures[workers].append(one)
                print(
                    f"{run:>4} {workers:>8} {load:>8.2f} {warm_up:>9.1f} {wall:>7.1f} {one['audio']:>8.1f} {one['llm']:>7.1f}"
                    f" {db:>6.1f} {step:>7.1f} {one['cpu']:>6.1f} {critical:>9.1f} {twice:>6} {len(kept):>5}"
                    f"  {build.status}; kept samples the last stage never finished: {unfinished}",
                    flush=True,
                )
                # Each stage's own wall time: what does not divide between workers (a stage's start
                # and end, its fixed reads and writes) shows in the short stages.
                print(
                    f"       bookkeeping CPU {db_cpu:.2f} s (the workers' main threads), {queries:.0f} statements"
                    f" of the workers' main threads; stages, wall s: "
                    + ", ".join(
                        f"{row.stage} {(row.finished_at - row.started_at).total_seconds():.2f}"
                        for row in stage_rows
                        if row.started_at and row.finished_at
                    ),
                    flush=True,
                )
        finally:
            stop.set()
            llm.join(timeout=10)
    print(f"medians of {rounds}; speed-up = 1 worker / 2 workers")
    for key, label in (
        ("audio", "audio stages (CPU-bound), wall"),
        ("llm", "LLM stages (scripted LLM), wall"),
        ("wall", "whole build, wall"),
        ("db", "claims bookkeeping, seconds summed over workers"),
        ("db_cpu", "claims bookkeeping, CPU s summed over workers"),
        ("queries", "statements of the workers' main threads (count)"),
        ("step", "audio steps, seconds summed over workers"),
        ("critical", "audio stages, busiest worker's CPU s per stage"),
    ):
        single, double = _median([f[key] for f in figures[1]]), _median([f[key] for f in figures[2]])
        print(f"  {label:<48} 1: {single:>7.1f} s  2: {double:>7.1f} s  {single / max(double, 1e-9):>5.2f}x")
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


def run(sizes: list[int], formats: list[str], *, build: bool = True) -> None:
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
                if build:
                    made = _child(env, "populate", str(size))
                    print(f"  (populated {size:,} samples in {made['seconds']:.0f} s)", file=sys.stderr)
                    print(
                        _row(
                            "build export",
                            size,
                            _child(env, "build_export", str(made["build"]), f"{scratch}/build"),
                        )
                    )
                for records_format in formats:
                    folder = f"{scratch}/records-{records_format}"
                    print(
                        _row(
                            f"records {records_format}",
                            size,
                            _child(env, "records_export", str(size), folder, records_format),
                        )
                    )
                    print(
                        _row(
                            f"  read {records_format}",
                            size,
                            _child(env, "records_read", folder, records_format),
                        )
                    )
            sys.stdout.flush()
    print(f"load average after: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[40_000, 400_000])
    parser.add_argument(
        "--formats",
        nargs="+",
        choices=["jsonl", "arrow"],
        default=["jsonl", "arrow"],
        help="training-record formats to write and read back (default: both)",
    )
    parser.add_argument("--no-build-export", action="store_true", help="only the training records")
    parser.add_argument("--workers-build", type=int, metavar="N", help="1 vs 2 builder workers on N samples")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="--workers-build: workers start cold (no warm-up before the clock)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs of each for --workers-build")
    parser.add_argument("--step", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.workers_build:
        workers_build(options.workers_build, options.rounds, warm=not options.cold)
        return
    if options.step:
        name, *args = options.step
        if name == "populate":
            result = populate(int(args[0]))
        elif name == "build_export":
            result = build_export(int(args[0]), args[1])
        elif name == "records_read":
            result = records_read(args[0], args[1])
        else:
            result = records_export(int(args[0]), args[1], *args[2:])
        print(json.dumps(result))
        return
    run(options.sizes, options.formats, build=not options.no_build_export)


if __name__ == "__main__":
    main()
