"""What the server benchmarks share: a throwaway PostgreSQL database beside DATABASE_URL's, and
gunicorn serving it with the project's gunicorn.conf.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg

from bench import figures
from bench.figures import Timing, timing

ROOT = Path(__file__).resolve().parent.parent


def postgres_urls(database: str) -> tuple[str, str]:
    """Return (DATABASE_URL, the URL of `database` on the same server); exit unless it is PostgreSQL."""
    given = os.environ.get("DATABASE_URL", "")
    if not given.startswith(("postgres://", "postgresql://")):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (postgres://...).")
    return given, urlunsplit(urlsplit(given)._replace(path=f"/{database}"))


def _admin(server_url: str, statement: str) -> None:
    with psycopg.connect(server_url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(statement)


@contextmanager
def throwaway_database(server_url: str, database: str) -> Iterator[None]:
    """Create `database` empty on the server, and drop it afterwards whatever happens."""
    _admin(server_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    _admin(server_url, f"CREATE DATABASE {database}")
    try:
        yield
    finally:
        from django.db import connections

        connections.close_all()
        _admin(server_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def gunicorn(
    env: dict[str, str],
    log: Path,
    pids: list[int] | None = None,
    *,
    python: str = sys.executable,
    app: str = "webapp.wsgi",
    cwd: Path = ROOT,
    ready_path: str = "/healthz",
) -> Iterator[str]:
    """Serve `app` (webapp.wsgi) with the project's gunicorn.conf.py; yield its base URL once it answers
    (and append the master's pid to `pids`, for a bench that kills its workers or reads their CPU).

    Another app (Label Studio, from its own virtualenv: `python`, `cwd`) runs under the same settings.
    """
    base_url = f"http://127.0.0.1:{free_port()}"
    command = [python, "-m", "gunicorn", "-c", str(ROOT / "gunicorn.conf.py")]
    command += ["--bind", base_url.removeprefix("http://"), app]
    server = subprocess.Popen(
        [*command, "--access-logfile", "/dev/null"],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    if pids is not None:
        pids.append(server.pid)
    try:
        deadline = time.monotonic() + 60
        while not _answers(base_url + ready_path):
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"gunicorn did not answer; see {log}")
            time.sleep(0.3)
        yield base_url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


def worker_pids(master: int) -> list[int]:
    """Return the pids of a gunicorn master's workers."""
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def rss_mib(pids: list[int]) -> list[float]:
    """Return each process's resident memory in MiB."""
    sizes = []
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                sizes.append(int(line.split()[1]) / 1024)
    return sizes


def backend_pids(server_url: str, database: str) -> list[int]:
    """Return the PostgreSQL backends connected to `database` (the servers' persistent connections)."""
    with psycopg.connect(server_url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (database,)
        ).fetchall()
    return [int(row[0]) for row in rows]


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """Return the user + system CPU seconds each process has used (leaving out any that has gone)."""
    used = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        used[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return used


def load_average() -> str:
    """Return the 1, 5 and 15 minute load averages and the core count, for a bench's report."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} on {os.cpu_count()} cores"


def timed_interleaved(
    runs: list[tuple[Callable[[], object], Callable[[], list[int]]]], repeats: int, warmup: int = 3
) -> list[Timing]:
    """Time each (request, its server's pids) `repeats` times, taking turns request by request, so a
    change in the machine's load falls on every server alike; return each one's figures.

    Each server's CPU is read just before and after its own request, outside the timed span.
    """
    for run, _ in runs:
        for _ in range(warmup):
            run()
    times: list[list[float]] = [[] for _ in runs]
    cpu = [0.0 for _ in runs]
    for _ in range(repeats):
        for index, (run, server_pids) in enumerate(runs):
            before = cpu_seconds(server_pids())  # read again each time: backends come and go
            started = time.perf_counter()
            run()
            times[index].append((time.perf_counter() - started) * 1000.0)
            cpu[index] += figures.cpu_spent(before, cpu_seconds(list(before))) * 1000.0
    return [timing(own_times, own_cpu) for own_times, own_cpu in zip(times, cpu, strict=True)]
