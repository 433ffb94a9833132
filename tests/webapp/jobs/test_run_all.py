"""`manage.py run_all` (what `make run` starts) runs the site, a worker and beat, and one Ctrl-C
stops every process it started within a few seconds."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

STARTUP_SECONDS = 120
STOP_SECONDS = 10


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _process_table() -> dict[int, tuple[int, int, str]]:
    """Return {pid: (parent pid, process group, state)} of every process, read from /proc."""
    table: dict[int, tuple[int, int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone while we looked
        # The command name is in parentheses and may hold spaces; the fields after it are fixed.
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry.name)] = (int(fields[1]), int(fields[2]), fields[0])
    return table


def _descendants(root: int) -> set[int]:
    table = _process_table()
    found, frontier = set(), [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, (ppid, _, _) in table.items() if ppid == parent]
        found.update(children)
        frontier.extend(children)
    return found


def _alive(pids: set[int], groups: set[int]) -> set[int]:
    """Return the processes among `pids`, or in one of `groups`, that still run (zombies are dead)."""
    return {
        pid
        for pid, (_, group, state) in _process_table().items()
        if state != "Z" and (pid in pids or group in groups)
    }


def _site_answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except urllib.error.HTTPError:
        return True  # an error page is an answer: the server is up
    except OSError:
        return False
    return True


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    port = _free_port()
    log = tmp_path / "run_all.log"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "ECHOSTUDIO_MEDIA_ROOT")
    }
    # Its own SQLite file and file broker: this worker must never take other tests' jobs.
    env.update(ECHOSTUDIO_VAR_DIR=str(tmp_path / "var"), DJANGO_DEBUG="1")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "run_all", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a terminal's foreground group, which Ctrl-C signals
        )
    started: set[int] = set()
    try:
        yield process, port, log
    finally:
        started = _descendants(process.pid) | {process.pid}
        for pid in _alive(started, set()):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        process.wait(timeout=10)


def test_one_ctrl_c_stops_the_site_the_worker_and_beat_leaving_no_process(
    supervisor: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    process, port, log = supervisor
    deadline = time.monotonic() + STARTUP_SECONDS
    text = ""
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        assert process.poll() is None, f"run_all exited early:\n{text[-4000:]}"
        if (
            " ready." in text
            and "beat: Starting" in text
            and _site_answers(f"http://127.0.0.1:{port}/healthz")
        ):
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"site, worker and beat never all came up:\n{text[-4000:]}")
    children = _descendants(process.pid)
    groups = {group for pid, (_, group, _) in _process_table().items() if pid in children}
    # runserver and the server it reloads, the worker and its pool, beat.
    assert len(children) >= 4, children
    assert process.pid not in groups, "children must not share the terminal's process group"

    os.killpg(process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    stopped_by = time.monotonic() + STOP_SECONDS
    while time.monotonic() < stopped_by and (process.poll() is None or _alive(children, groups)):
        time.sleep(0.1)

    output = log.read_text(errors="replace")
    assert process.poll() is not None, f"run_all still runs {STOP_SECONDS} s after Ctrl-C:\n{output[-4000:]}"
    assert _alive(children, groups) == set(), f"processes left behind:\n{output[-4000:]}"
    assert process.returncode == 0
    assert output.count("Warm shutdown") <= 1
    assert "SIGINT received" in output
    assert not _site_answers(f"http://127.0.0.1:{port}/healthz")
