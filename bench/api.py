"""REST API speed under gunicorn on PostgreSQL at 10,000 and 100,000 items (3 annotations each).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio nice .venv/bin/python bench/api.py

A throwaway database "bench_<name>" is created next to the one DATABASE_URL names (and dropped). The
script starts `gunicorn webapp.wsgi` (the project's gunicorn.conf.py, 2 workers) on it and times each request from a client on
the same machine (loopback round trip: an upper bound on server time), median and p95 over REPEATS
requests, authenticated with a personal token. Query counts come from the same requests run
in-process, and must not grow from 10K to 100K items. Targets: Label Studio 1.23 / 10 (task list
20 ms, one task 15 ms, annotation write 10 ms).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django

django.setup()

import httpx
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, setup_test_environment

from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from annotation.recording.models import Item
from webapp.api.tokens import create_token
from webapp.lib.vocabulary import SCENARIOS, SPLITS
from webapp.models import User
from webapp.roles import Role, grant_role

REPEATS = 60
CPU_REPEATS = 20
PORT = 8765
ANNOTATORS = 30


def build(first: int, count: int, annotators: list[User]) -> None:
    """Add `count` items (ids from `first`) with 3 annotations each; every 20th item gets gold."""
    items = Item.objects.bulk_create(
        (
            Item(
                external_id=f"API-{n:06d}",
                text=f"Utterance {n}: oh great, another Monday.",
                scenario=SCENARIOS[n % len(SCENARIOS)],
                split=SPLITS[n % len(SPLITS)],
                target_emotion="angry",
                state=Item.State.ANNOTATING,
            )
            for n in range(first, first + count)
        ),
        batch_size=5000,
    )
    statuses = (Annotation.Status.ASSIGNED, Annotation.Status.DRAFT, Annotation.Status.SUBMITTED)
    Annotation.objects.bulk_create(
        (
            Annotation(
                item=item, annotator=annotators[(i * 3 + k) % ANNOTATORS], status=statuses[(i + k) % 3]
            )
            for i, item in enumerate(items, start=first)
            for k in range(3)
        ),
        batch_size=10000,
    )
    GoldReference.objects.bulk_create(
        (GoldReference(item=item, version=1, is_current=True) for item in items[::20]), batch_size=5000
    )


def timed(http: httpx.Client, method: str, urls: list[str], body: object = None) -> tuple[float, float]:
    """Return (median, p95) milliseconds of the requests (one per url, cycling)."""
    http.request(method, urls[0], json=body)
    times = []
    for n in range(REPEATS):
        started = time.perf_counter()
        response = http.request(method, urls[n % len(urls)], json=body)
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code >= 400:
            raise SystemExit(
                f"{method} {urls[n % len(urls)]} answered {response.status_code}: {response.text[:300]}"
            )
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def queries(token: str, method: str, url: str, body: object = None) -> tuple[int, float]:
    """Return (SQL queries of one request, median Django CPU ms over in-process requests).

    CPU time of the Django process is what a busy shared machine inflates least; it leaves out
    PostgreSQL's own time, which the round trips include.
    """
    client = Client(HTTP_AUTHORIZATION=f"Token {token}")

    def send() -> None:
        if method == "GET":
            client.get(url)
        else:
            client.generic(method, url, data=json.dumps(body), content_type="application/json")

    started = time.process_time()
    with CaptureQueriesContext(connection) as captured:
        send()
    cpu = [(time.process_time() - started) * 1000]
    # Counted now: the captured list is a slice of a log that the next request resets.
    count = len(captured)
    # A write is sent once: a second PUT at the same version would be a (cheaper) 409.
    for _ in range(CPU_REPEATS if method == "GET" else 0):
        started = time.process_time()
        send()
        cpu.append((time.process_time() - started) * 1000)
    return count, statistics.median(cpu)


def measure(
    base: str, admin_token: str, annotator: User, annotator_token: str, judge_id: int
) -> list[tuple[str, int, float, float, float]]:
    admin = httpx.Client(base_url=base, headers={"Authorization": f"Token {admin_token}"})
    writer = httpx.Client(base_url=base, headers={"Authorization": f"Token {annotator_token}"})
    gold_item = GoldReference.objects.current().select_related("item").first().item.external_id  # type: ignore[union-attr]
    drafts = list(
        Annotation.objects.filter(annotator=annotator, status=Annotation.Status.DRAFT).values_list(
            "pk", "version"
        )[:REPEATS]
    )
    cases = [
        ("list items (page of 100)", admin, "GET", ["/api/items/"], None, admin_token),
        (
            "list items, filtered split+scenario",
            admin,
            "GET",
            ["/api/items/?split=train&scenario=implicit"],
            None,
            admin_token,
        ),
        ("one item with current gold", admin, "GET", [f"/api/items/{gold_item}/"], None, admin_token),
        ("list my annotations", writer, "GET", ["/api/annotations/"], None, annotator_token),
        (
            "leaderboard JSON 1,000 x 13",
            admin,
            "GET",
            [f"/api/leaderboard/?judge={judge_id}"],
            None,
            admin_token,
        ),
    ]
    rows = []
    for name, http, method, urls, body, token in cases:
        median, p95 = timed(http, method, urls, body)
        rows.append((name, *queries(token, method, urls[0], body), median, p95))
    # Each autosave writes a different draft at its current version (a new annotation state each time).
    body = {"version": 0, "perception": {}, "tom": {}}
    times = []
    for pk, version in drafts:
        started = time.perf_counter()
        response = writer.put(f"/api/annotations/{pk}/", json={**body, "version": version})
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code >= 400:
            raise SystemExit(f"autosave answered {response.status_code}: {response.text[:300]}")
    times.sort()
    pk, version = Annotation.objects.filter(pk=drafts[-1][0]).values_list("pk", "version").get()
    count, cpu_ms = queries(annotator_token, "PUT", f"/api/annotations/{pk}/", {**body, "version": version})
    median, p95 = statistics.median(times), times[int(len(times) * 0.95) - 1]
    rows.append(("save an annotation (PUT)", count, cpu_ms, median, p95))
    return rows


def main() -> None:
    if connection.vendor != "postgresql":
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (postgres://...).")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    setup_test_environment()
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_{connection.settings_dict['NAME']}"
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    server = None
    try:
        from leaderboard import fill  # bench/leaderboard.py: 1,000 items x 13 systems of judgements

        judge, _ = fill()
        annotators = []
        for n in range(ANNOTATORS):
            user = User.objects.create_user(username=f"bench-annotator-{n}")
            grant_role(user, Role.ANNOTATOR)
            annotators.append(user)
        admin = User.objects.create_user(username="bench-admin")
        grant_role(admin, Role.ADMIN)
        admin_token = create_token(admin, "bench").secret
        annotator_token = create_token(annotators[0], "bench").secret
        build(0, 10_000, annotators)
        connection.cursor().execute("ANALYZE")
        settings_dict = connection.settings_dict
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{settings_dict['USER']}@{settings_dict['HOST'] or '127.0.0.1'}:{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}",
        }
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "webapp.wsgi",
                "-w",
                "2",
                "-b",
                f"127.0.0.1:{PORT}",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{PORT}"
        for _ in range(100):
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        results = {"10K": measure(base, admin_token, annotators[0], annotator_token, judge.pk)}
        started = time.perf_counter()
        build(10_000, 90_000, annotators)
        connection.cursor().execute("ANALYZE")
        print(f"built 90,000 more items and 270,000 annotations in {time.perf_counter() - started:.0f} s")
        results["100K"] = measure(base, admin_token, annotators[0], annotator_token, judge.pk)
        print(
            f"\n{'request':38} {'items':>6} {'queries':>8} {'Django CPU ms':>14} {'median ms':>10} {'p95 ms':>8}"
        )
        for size, rows in results.items():
            for name, count, cpu_ms, median, p95 in rows:
                print(f"{name:38} {size:>6} {count:>8} {cpu_ms:>14.1f} {median:>10.1f} {p95:>8.1f}")
        steady = all(a[1] == b[1] for a, b in zip(results["10K"], results["100K"], strict=True))
        print(f"\nquery counts independent of the data size: {'yes' if steady else 'NO'}")
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
        connection.creation.destroy_test_db(database, verbosity=0)


if __name__ == "__main__":
    main()
