"""Item import speed and memory (issue 27): rows/s and peak RSS, in-process and through the upload page.

Run against PostgreSQL (a throwaway database "<name>_items_bench" is made beside the one
DATABASE_URL names, and dropped afterwards):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/h27imp_bench nice .venv/bin/python bench/item_import.py \
        [--rows 100000 1000000]

For each size, a CSV of that many new items (five columns, as a spreadsheet export has) is imported:

- in-process, into an empty studio (what `manage.py import_items` does), then the same file
  again (every row unchanged: the staging path, which compares each row with its item);
- through the upload page of gunicorn (one worker, the project's gunicorn.conf.py) into an empty
  studio, the file streamed from disk by httpx. A file above the page's synchronous limit becomes a
  job; its figure is the upload plus the job, run as a worker runs it.

Each import runs in a fresh process, so its peak RSS (the kernel's high-water mark) is the
import's own, with Django loaded: flat memory means the same peak at 100K and at 1M. The machine is
shared, so the load average is printed beside every figure, and so is the CPU time per row of the
importing process and of its PostgreSQL backend, which the load hardly changes: on an idle
machine the rate is bounded by 1 / (app + PostgreSQL) when they take turns, 1 / max of the two
when the COPY overlaps them on two cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

SCENARIOS = ("implicit", "audio-dominant", "high-arousal", "modality-conflict", "emotion-shift")
EMOTIONS = ("happy", "sad", "angry", "surprise", "disgust", "fear", "neutral")


def write_items(path: Path, rows: int) -> None:
    """Write a CSV of `rows` new items, in blocks (the bench's own memory stays small too)."""
    with path.open("w", encoding="utf-8") as out:
        out.write("external_id,text,scenario,target_emotion,split\n")
        for start in range(0, rows, 10_000):
            out.write(
                "".join(
                    f'BENCH-{n:07d},"Utterance {n}: oh great, another Monday.",{SCENARIOS[n % 5]},'
                    f"{EMOTIONS[n % 7]},{'train' if n % 4 else 'test'}\n"
                    for n in range(start, min(rows, start + 10_000))
                )
            )


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds(pids: list[int]) -> float:
    """Return the user + system CPU time the processes have used (0 for any that has gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def backends() -> list[int]:
    """Return the PostgreSQL backends serving the bench database (on this machine), but this one."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return [pid for (pid,) in cursor.fetchall()]


def process_memory_mib(pid: int) -> tuple[float, float]:
    """Return (RSS now, peak RSS) of a process, in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    now, peak = (re.search(rf"{key}:\s+(\d+)", status) for key in ("VmRSS", "VmHWM"))
    return int(now.group(1)) / 1024, int(peak.group(1)) / 1024  # type: ignore[union-attr]


# --- run in a child process, with DATABASE_URL naming the throwaway database ---------------------


def child(case: str, argument: str) -> dict[str, Any]:
    import django

    django.setup()
    from django.db import connection

    from annotation.recording.items import import_items
    from webapp.jobs import run_job

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    before, cpu_before = peak_rss_mib(), (time.process_time(), cpu_seconds([backend]))
    started = time.perf_counter()
    if case == "in-process":
        with open(argument, "rb") as handle:
            report = import_items(handle, "items.csv")
        outcome = {"created": report.created, "unchanged": report.unchanged, "errors": len(report.errors)}
    else:  # a job the upload page queued (its progress writer's own connection is left out)
        run_job(int(argument))
        outcome = {}
    return {
        "seconds": time.perf_counter() - started,
        "rss_before": before,
        "peak_rss": peak_rss_mib(),
        "app_cpu": time.process_time() - cpu_before[0],
        "db_cpu": cpu_seconds([backend]) - cpu_before[1],
        **outcome,
    }


def run_child(env: dict[str, str], case: str, argument: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", case, argument],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"the {case} import failed:\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --- the parent --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(*options.child)))
        return

    from bench.servers import postgres_urls, throwaway_database

    given, _ = postgres_urls("postgres")
    database = f"{urlsplit(given).path.strip('/') or 'echostudio'}_items_bench"
    server_url, url = postgres_urls(database)
    env = {**os.environ, "DATABASE_URL": url, "ECHOSTUDIO_WEB_WORKERS": "1"}
    os.environ["DATABASE_URL"] = url
    print(f"{load()} at start; PostgreSQL database {database}")
    with throwaway_database(server_url, database), tempfile.TemporaryDirectory() as scratch:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        for rows in options.rows:
            path = Path(scratch) / f"items-{rows}.csv"
            write_items(path, rows)
            print(f"\n{rows:,} rows ({path.stat().st_size / 2**20:.1f} MiB of CSV)")
            measure(env, path, rows, Path(scratch))
            path.unlink()


def measure(env: dict[str, str], path: Path, rows: int, scratch: Path) -> None:
    from annotation.recording.models import Item

    def empty_studio() -> None:
        Item.objects.all().delete() if Item.objects.count() < 1000 else _truncate_items()

    empty_studio()
    first = run_child(env, "in-process", str(path))
    assert first["created"] == rows, first
    show("in-process, new items", rows, first)
    again = run_child(env, "in-process", str(path))
    assert again["unchanged"] == rows, again
    show("in-process, same file again (unchanged)", rows, again)
    empty_studio()
    show("upload page, new items", rows, through_the_page(env, path, rows, scratch))
    empty_studio()
    show("the floor: COPY of the rows as prepared text", rows, copy_floor(path, scratch))


def copy_floor(path: Path, scratch: Path) -> dict[str, Any]:
    """Return the figures of PostgreSQL's COPY of the same items, already in COPY's text format,
    into the same table in one transaction: what an import cannot beat (its rows rolled back)."""
    import csv

    from django.db import connection

    from annotation.recording.models import Item

    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    prepared = scratch / "items.copy"
    with path.open(newline="", encoding="utf-8") as source, prepared.open("w", encoding="utf-8") as out:
        for external_id, text, scenario, emotion, split in itertools.islice(csv.reader(source), 1, None):
            out.write(
                f"{external_id}\t{text}\t{scenario}\t{emotion}\t\tmedium\t\t{split}\tscripted\t{now}\t{now}\n"
            )
    columns = "external_id, text, scenario, target_emotion, emotion_variant, target_intensity, instructions, "
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
        cpu_before, started = cpu_seconds([backend]), time.perf_counter()
        with (
            connection.cursor().cursor.copy(
                f"COPY {Item._meta.db_table} ({columns}split, state, created_at, updated_at) FROM STDIN"
            ) as copy,
            prepared.open("rb") as handle,
        ):
            while block := handle.read(2**20):
                copy.write(block)
        seconds, db_cpu = time.perf_counter() - started, cpu_seconds([backend]) - cpu_before
    connection.rollback() if not connection.get_autocommit() else _truncate_items()
    prepared.unlink()
    return {"seconds": seconds, "app_cpu": 0.0, "db_cpu": db_cpu, "rss_before": 0.0, "peak_rss": 0.0}


def through_the_page(env: dict[str, str], path: Path, rows: int, scratch: Path) -> dict[str, Any]:
    import httpx
    from django.test import Client

    from annotation.recording.models import Item
    from bench.servers import gunicorn
    from webapp.models import Job, User
    from webapp.roles import Role, grant_role

    admin, _ = User.objects.get_or_create(username="bench-admin")
    grant_role(admin, Role.ADMIN)
    session = Client()
    session.force_login(admin)
    token = "b" * 32
    cookies = {"sessionid": session.cookies["sessionid"].value, "csrftoken": token}
    pids: list[int] = []
    with gunicorn(env, scratch / "gunicorn.log", pids) as base:
        worker = int(Path(f"/proc/{pids[0]}/task/{pids[0]}/children").read_text().split()[0])
        rss_before, _ = process_memory_mib(worker)
        with httpx.Client(
            base_url=base, timeout=600, cookies=cookies, headers={"X-CSRFToken": token}
        ) as http:
            http.get("/manage/items/import/")  # the worker's connection opens before the clock starts
            serving = [worker, *backends()]
            cpu_before = cpu_seconds(serving[:1]), cpu_seconds(serving[1:])
            started = time.perf_counter()
            with path.open("rb") as handle:
                response = http.post(
                    "/manage/items/import/", files={"file": ("items.csv", handle, "text/csv")}
                )
            seconds = time.perf_counter() - started
        _, peak = process_memory_mib(worker)
        app_cpu = cpu_seconds(serving[:1]) - cpu_before[0]
        db_cpu = cpu_seconds(serving[1:]) - cpu_before[1]
    figure: dict[str, Any] = {
        "seconds": seconds,
        "rss_before": rss_before,
        "peak_rss": peak,
        "app_cpu": app_cpu,
        "db_cpu": db_cpu,
    }
    if response.status_code == 302:  # a large file: the page queued a job
        job = Job.objects.filter(kind="import_items").latest("pk")
        ran = run_child(env, "job", str(job.pk))
        figure = {
            "seconds": seconds + ran["seconds"],
            "rss_before": rss_before,
            "peak_rss": peak,
            "job_peak_rss": ran["peak_rss"],
            "upload_seconds": seconds,
            "app_cpu": app_cpu + ran["app_cpu"],
            "db_cpu": db_cpu + ran["db_cpu"],
        }
    elif f'data-testid="created">{rows}<'.encode() not in response.content:
        raise SystemExit(f"the page did not import {rows} rows ({response.status_code})")
    if Item.objects.count() != rows:
        raise SystemExit(f"the page's import left {Item.objects.count()} items, not {rows}")
    return figure


def _truncate_items() -> None:
    from django.db import connection

    from annotation.recording.models import Item

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {Item._meta.db_table} CASCADE")


def show(what: str, rows: int, figure: dict[str, Any]) -> None:
    extra = ""
    if "job_peak_rss" in figure:
        extra = (
            f" (upload {figure['upload_seconds']:.2f} s, then a job; job process peak RSS "
            f"{figure['job_peak_rss']:.0f} MiB)"
        )
    app, db = (1e6 * figure[key] / rows for key in ("app_cpu", "db_cpu"))
    memory = (
        f"peak RSS {figure['peak_rss']:.0f} MiB (before {figure['rss_before']:.0f})"
        if figure["peak_rss"]
        else ""
    )
    print(
        f"  {what:44} {rows / figure['seconds']:>9,.0f} rows/s  {figure['seconds']:6.2f} s  "
        f"CPU per row: app {app:.1f} us + PostgreSQL {db:.1f} us  {memory}{extra}  {load()}"
    )


if __name__ == "__main__":
    main()
