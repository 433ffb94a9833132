"""The faults bench/concurrency.py puts the load through, and the clients that keep writing through them.

Each fault runs while annotators keep saving and submitting over the API. Every write carries an
Idempotency-Key and is sent again with it after a connection error or a 5xx, as the echostudio
client does, so an answer lost to the fault is recovered, never applied twice. Recovery time is
measured from the fault until a probe request succeeds again (for the task worker: until its job
runs again on the worker that replaced it). Everything runs on 127.0.0.1 and is bounded: each
client stops after its annotations or after RETRY_SECONDS without an answer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from threading import Event, Lock, Thread
from typing import Any

import httpx

from bench.people import FAULTS, Seeded, client, perception, rows_of, tom
from bench.servers import ROOT

RETRY_SECONDS = 30.0
PROBE_EVERY_SECONDS = 0.02


@dataclass
class Acknowledged:
    """The writes a client got a 2xx for, with the key it sent, and what went wrong on the way."""

    labels: dict[int, str] = field(default_factory=dict)  # annotation id -> marker stored last
    submits: dict[int, str] = field(default_factory=dict)
    retries: int = 0
    gave_up: int = 0
    lock: Lock = field(default_factory=Lock)


def write_until_answered(
    http: httpx.Client, method: str, url: str, body: dict[str, Any], record: Acknowledged
) -> httpx.Response | None:
    """Send one write with an Idempotency-Key until it is answered (not 5xx, no connection error)."""
    key = str(uuid.uuid4())
    deadline = time.monotonic() + RETRY_SECONDS
    while time.monotonic() < deadline:
        try:
            response = http.request(method, url, json=body, headers={"Idempotency-Key": key})
            if response.status_code < 500:
                return response
        except httpx.TransportError:
            pass
        with record.lock:
            record.retries += 1
        time.sleep(0.05)
    with record.lock:
        record.gave_up += 1
    return None


def keep_annotating(
    http: httpx.Client,
    rows: list[dict[str, Any]],
    record: Acknowledged,
    labels: Callable[[str, int], dict[str, Any]],
) -> None:
    """Autosave then submit each annotation, recording what the server acknowledged."""
    for row in rows:
        pk, version = row["id"], row["version"]
        draft = f"fault draft {pk}"
        saved = write_until_answered(http, "PUT", f"/api/annotations/{pk}/", labels(draft, version), record)
        if saved is not None and saved.status_code == 200:
            version = saved.json()["version"]
            with record.lock:
                record.labels[pk] = draft
        final = f"fault final {pk}"
        done = write_until_answered(
            http, "POST", f"/api/annotations/{pk}/submit/", labels(final, version), record
        )
        if done is not None and done.status_code == 200:
            with record.lock:
                record.labels[pk] = final
                record.submits[pk] = final


class Probe(Thread):
    """Asks `check` every PROBE_EVERY_SECONDS from before a fault until stopped, keeping each answer."""

    def __init__(self, check: Callable[[], bool]) -> None:
        super().__init__(daemon=True)
        self.check, self.stopped, self.answers = check, Event(), list[tuple[float, bool]]()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.answers.append((time.monotonic(), self.check()))
            time.sleep(PROBE_EVERY_SECONDS)

    def recovery_after(self, injected_at: float) -> float:
        """Seconds from `injected_at` to the first answer after the last failed one (0: none failed)."""
        self.stopped.set()
        self.join(timeout=10)
        failures = [moment for moment, ok in self.answers if moment >= injected_at and not ok]
        if not failures:
            return 0.0
        back = [moment for moment, ok in self.answers if ok and moment > failures[-1]]
        return back[0] - injected_at if back else float("nan")


def answers(base_url: str, cookies: dict[str, str]) -> Callable[[], bool]:
    """A probe: an annotator's list request succeeds end to end (web worker and database)."""

    def probe() -> bool:
        try:
            return httpx.get(f"{base_url}/api/annotations/", cookies=cookies, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    return probe


def restart_postgresql() -> None:
    """Restart the PostgreSQL cluster (every connection is cut; the server is back within a second or two)."""
    cluster = next(iter(sorted(os.listdir("/etc/postgresql"))))
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", cluster, "main", "restart"], check=True)


def restart_redis(port: int = 6379) -> None:
    """Stop Redis and start it again on the same port (it keeps nothing on disk here)."""
    subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], check=False, capture_output=True)
    time.sleep(0.5)
    subprocess.run(
        ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", str(port),
         "--save", "", "--appendonly", "no"],
        check=True, capture_output=True,
    )  # fmt: skip


def redis_answers(port: int = 6379) -> bool:
    done = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True, check=False)
    return done.stdout.strip() == "PONG"


def kill_one_web_worker(master_pid: int) -> int:
    """SIGKILL one gunicorn worker of `master_pid` (gunicorn starts a new one); return its pid."""
    children = subprocess.run(["pgrep", "-P", str(master_pid)], capture_output=True, text=True, check=True)
    victim = int(children.stdout.split()[0])
    os.kill(victim, signal.SIGKILL)
    return victim


@contextmanager
def celery_worker(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker on the default queue; killed (not stopped) when the block ends."""
    command = [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", "default", "--concurrency", "1",
               "--pool", "solo", "--loglevel", "INFO"]  # fmt: skip
    worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("ab"))
    try:
        yield worker
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=30)


@contextmanager
def celery_beat(env: dict[str, str], var_dir: Path) -> Iterator[None]:
    """Celery beat, which runs the reaper of jobs whose worker died (as production runs one)."""
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "webapp",
        "beat",
        "--schedule",
        str(var_dir / "beat-schedule"),
    ]
    beat = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=(var_dir / "beat.log").open("ab")
    )
    try:
        yield
    finally:
        beat.kill()
        beat.wait(timeout=30)


def _job(job_id: int) -> Any:
    from django.db import close_old_connections

    from webapp.models import Job

    close_old_connections()
    return Job.objects.get(pk=job_id)


def _wait_for(condition: Callable[[], bool], limit: float) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except Exception:  # the database may be restarting under another fault's tail
            from django.db import connections

            connections.close_all()
        time.sleep(0.05)
    return False


def start_sleep_job(steps: int, delay_s: float) -> int:
    from webapp.jobs import start_job

    return int(start_job("diagnostic_sleep", parameters={"steps": steps, "delay_s": delay_s}).pk)


def kill_worker_mid_job(env: dict[str, str], var_dir: Path) -> tuple[float, dict[str, Any]]:
    """Kill a Celery worker (SIGKILL) while it runs a job; a fresh worker must finish it, once.

    Return the seconds from the kill until the job runs again, and what the job row says after."""
    log = var_dir / "celery.log"
    with celery_worker(env, log) as first:
        job_id = start_sleep_job(steps=40, delay_s=0.1)
        if not _wait_for(lambda: _job(job_id).progress >= 0.2, 60):
            raise SystemExit(f"the worker never ran the job; see {log}")
        first.kill()
        killed_at = time.monotonic()
    with celery_worker(env, log):
        running_again = _wait_for(lambda: _job(job_id).attempts >= 2, 60)
        recovery = time.monotonic() - killed_at if running_again else float("nan")
        _wait_for(lambda: _job(job_id).status in ("succeeded", "failed", "cancelled"), 60)
    job = _job(job_id)
    steps_of_last = [point["step"] for point in job.metrics if point.get("attempt") == job.attempts]
    return recovery, {
        "status": job.status,
        "attempts": job.attempts,
        "last attempt ran every step once": steps_of_last == list(range(1, 41)),
    }


def jobs_started_through_the_outage(job_ids: list[int]) -> dict[str, int]:
    """After the broker is back: how the jobs started while it was down ended (none may be stuck)."""
    from collections import Counter

    _wait_for(lambda: all(_job(pk).status in ("succeeded", "failed") for pk in job_ids), 60)
    return dict(Counter(str(_job(pk).status) for pk in job_ids))


def fault_phase(
    base_url: str, master_pid: int, env: dict[str, str], var_dir: Path, seeded: Seeded
) -> tuple[Acknowledged, dict[str, float], dict[str, Any]]:
    """Put each fault under the annotators' load in turn; return what was acknowledged, the recovery
    time of each fault, and how the jobs caught by a fault ended."""
    acknowledged, recovery, jobs, cut = Acknowledged(), {}, {}, {}

    def labels(marker: str, version: int) -> dict[str, Any]:
        return {"perception": perception(marker), "tom": tom(marker), "version": version}

    with celery_beat(env, var_dir):
        for fault in FAULTS:
            from django.db import connections

            connections.close_all()  # a restarted database cut this process's connection too
            sessions = [client(base_url, cookies) for cookies in seeded.fault_cookies[fault]]
            retries_before = acknowledged.retries
            with ThreadPoolExecutor(len(sessions)) as people:
                load = [
                    people.submit(
                        keep_annotating, http, rows_of(http.get("/api/annotations/")), acknowledged, labels
                    )
                    for http in sessions
                ]
                time.sleep(1.0)
                probe = Probe(
                    redis_answers
                    if fault == "broker restart"
                    else answers(base_url, seeded.fault_cookies[fault][0])
                )
                probe.start()
                time.sleep(0.2)
                injected_at = time.monotonic()
                if fault == "database restart":
                    restart_postgresql()
                elif fault == "broker restart":
                    with celery_worker(env, var_dir / "celery.log"):
                        restart_redis()
                        # Jobs started while the broker is down must still run once it is back.
                        during = [start_sleep_job(steps=3, delay_s=0.05) for _ in range(3)]
                        jobs["started while the broker was down"] = jobs_started_through_the_outage(during)
                elif fault == "web worker killed":
                    kill_one_web_worker(master_pid)
                if fault == "task worker killed mid-job":
                    probe.stopped.set()
                    recovery[fault], jobs["killed mid-job"] = kill_worker_mid_job(env, var_dir)
                else:
                    time.sleep(3.0)
                    recovery[fault] = probe.recovery_after(injected_at)
                for done in load:
                    done.result()
            cut[fault] = acknowledged.retries - retries_before
            for http in sessions:
                http.close()
    jobs["writes cut by each fault (sent again with their key)"] = cut
    return acknowledged, recovery, jobs


def acknowledged_problems(acknowledged: Acknowledged, tab_winners: dict[int, str]) -> dict[str, int]:
    """Read back what the fault clients and the two-tab races were told was saved."""
    from django.db.models import Count

    from annotation.labelling.models import Annotation, AnnotationRevision

    situations = dict(
        Annotation.objects.filter(pk__in=[*acknowledged.labels, *tab_winners]).values_list(
            "pk", "perception__situation"
        )
    )
    revisions = Counter(
        dict(
            AnnotationRevision.objects.filter(annotation__in=acknowledged.submits)
            .values_list("annotation")
            .annotate(n=Count("pk"))
            .values_list("annotation", "n")
        )
    )
    return {
        "lost: two-tab saves (not one 200, or not its labels)": sum(
            1 for pk, winner in tab_winners.items() if situations.get(pk) != winner
        ),
        "lost: acknowledged writes through the faults": sum(
            1 for pk, marker in acknowledged.labels.items() if situations.get(pk) != marker
        ),
        "duplicated: submits through the faults": sum(1 for pk in acknowledged.submits if revisions[pk] != 1),
        "writes given up after 30 s of faults": acknowledged.gave_up,
    }
