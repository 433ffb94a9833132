"""Run the site, a Celery worker and Celery beat together; one Ctrl-C stops all three.

`make run` uses this instead of a shell trap. Each child runs in its own process group (its own
session), so the terminal's Ctrl-C reaches only this supervisor, which then stops every child
exactly once: SIGTERM to the site's group (runserver's autoreloader and the server it restarts),
SIGTERM to the Celery main processes (a warm shutdown that lets them finish and ack cleanly), and
after `--stop-timeout` seconds SIGKILL to whatever is left in any child's group, pool processes
included. A child that dies on its own stops the others too, so a broken worker is never hidden
behind a site that still answers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import IO, Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

# Seconds between checks that every child is still alive.
POLL_SECONDS = 0.2


@dataclass
class Child:
    """One supervised program: its name in the output, its command, and whether a stop signals
    its whole group (runserver's reloader leaves its server behind when only it is signalled)."""

    name: str
    command: list[str]
    signal_whole_group: bool
    process: subprocess.Popen[bytes] | None = None
    pumps: list[threading.Thread] = field(default_factory=list)

    def start(self, env: dict[str, str], out: IO[str], lock: threading.Lock, width: int) -> None:
        self.process = subprocess.Popen(
            self.command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: the terminal's Ctrl-C is for the supervisor only
        )
        prefix = f"{self.name:<{width}} | "
        assert self.process.stdout is not None
        pump = threading.Thread(
            target=_copy_lines, args=(self.process.stdout, out, prefix, lock), daemon=True
        )
        pump.start()
        self.pumps.append(pump)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ask_to_stop(self) -> None:
        if not self.running():
            return
        assert self.process is not None
        try:
            if self.signal_whole_group:
                os.killpg(self.process.pid, signal.SIGTERM)
            else:
                self.process.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass

    def kill_group(self) -> None:
        """SIGKILL everything left in the child's process group (the leader may be gone already)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


def _copy_lines(stream: IO[bytes], out: IO[str], prefix: str, lock: threading.Lock) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        with lock:
            out.write(prefix + line + "\n")
            out.flush()
    stream.close()


def group_alive(pgid: int) -> bool:
    """Return True while any process of the group exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Command(BaseCommand):
    help = "Run the site, a Celery worker and Celery beat; Ctrl-C (or SIGTERM) stops all of them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--concurrency", type=int, default=2, help="Worker processes")
        parser.add_argument(
            "--stop-timeout",
            type=float,
            default=6.0,
            help="Seconds to let the children stop cleanly before they are killed",
        )
        parser.add_argument("--noreload", action="store_true", help="Run the site without autoreload")

    def handle(self, *args: Any, **options: Any) -> None:
        children = self.children(options)
        stop_requested = threading.Event()
        received: list[str] = []

        def on_signal(number: int, _frame: FrameType | None) -> None:
            received.append(signal.Signals(number).name)
            stop_requested.set()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        lock = threading.Lock()
        width = max(len(child.name) for child in children)
        failed: Child | None = None
        try:
            for child in children:
                child.start(env, sys.stdout, lock, width)
            while not stop_requested.wait(POLL_SECONDS):
                failed = next((child for child in children if not child.running()), None)
                if failed is not None:
                    break
        finally:
            why = f"{received[0]} received" if received else f"{failed.name} exited" if failed else "stopping"
            self.say(lock, f"{why}; stopping {', '.join(child.name for child in children)}")
            self.stop(children, float(options["stop_timeout"]), lock)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if failed is not None and not received:
            assert failed.process is not None
            raise SystemExit(failed.process.returncode or 1)

    def children(self, options: dict[str, Any]) -> list[Child]:
        python = sys.executable
        manage = str(settings.BASE_DIR / "manage.py")
        site = [python, manage, "runserver", f"{options['host']}:{options['port']}"]
        if options["noreload"]:
            site.append("--noreload")
        celery = [python, "-m", "celery", "-A", "webapp"]
        schedule = settings.VAR_DIR / "celerybeat-schedule"
        schedule.parent.mkdir(parents=True, exist_ok=True)
        return [
            Child("web", site, signal_whole_group=True),
            Child(
                "worker",
                [
                    *celery,
                    "worker",
                    "-Q",
                    ",".join(settings.JOB_QUEUES),
                    "--concurrency",
                    str(options["concurrency"]),
                    "--loglevel",
                    "INFO",
                ],
                signal_whole_group=False,
            ),
            # The schedule (CELERY_BEAT_SCHEDULE in settings) with beat's state in a file in var/.
            Child(
                "beat",
                [*celery, "beat", "--loglevel", "INFO", "--schedule", str(schedule)],
                signal_whole_group=False,
            ),
        ]

    def stop(self, children: list[Child], timeout: float, lock: threading.Lock) -> None:
        """Ask every child to stop once, wait up to `timeout` seconds, then kill what is left."""
        for child in children:
            child.ask_to_stop()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(
            child.process is not None and group_alive(child.process.pid) for child in children
        ):
            for child in children:
                if child.process is not None:
                    child.process.poll()  # reap an exited leader, so its group can empty
            time.sleep(0.1)
        for child in children:
            if child.process is not None and group_alive(child.process.pid):
                # A worker busy with a job gets here; the job is run again once a worker finds it
                # without a heartbeat (webapp.jobs.reap_stale_jobs).
                self.say(lock, f"{child.name} still stopping after {timeout:g} s; killed it")
            child.kill_group()
            for pump in child.pumps:
                pump.join(timeout=2)
        self.say(lock, "all stopped")

    def say(self, lock: threading.Lock, message: str) -> None:
        with lock:
            self.stdout.write(f"run_all | {message}")
            self.stdout.flush()
