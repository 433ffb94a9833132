"""What the server benchmarks share: a throwaway PostgreSQL database beside DATABASE_URL's, and
gunicorn serving it with the project's gunicorn.conf.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg

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
def gunicorn(env: dict[str, str], log: Path, pids: list[int] | None = None) -> Iterator[str]:
    """Serve webapp.wsgi with the project's gunicorn.conf.py; yield its base URL once it answers
    (and append the master's pid to `pids`, for a bench that kills its workers)."""
    base_url = f"http://127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "gunicorn", "--bind", base_url.removeprefix("http://"), "webapp.wsgi"]
    server = subprocess.Popen(
        [*command, "--access-logfile", "/dev/null"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    if pids is not None:
        pids.append(server.pid)
    try:
        deadline = time.monotonic() + 60
        while not _answers(base_url):
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"gunicorn did not answer; see {log}")
            time.sleep(0.3)
        yield base_url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _answers(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/healthz", timeout=2).status_code < 500
    except httpx.HTTPError:
        return False
