"""EchoStudio at 10,000 and 100,000 items with 30,000 annotations, measured against gunicorn (issue 14).

Run against PostgreSQL (a throwaway database "bench_scale_<name>" is created next to the one
DATABASE_URL names, and dropped afterwards):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio nice .venv/bin/python bench/scale.py [--keep]

Items arrive through the import page (the same `import_items` the command line uses): 10,000, then
90,000 more. 30,000 annotations (3 per item on the first 10,000 items, 30 annotators, with accepted
takes carrying display contours) stay the same while the items grow. Each request is timed from a
client over HTTP against gunicorn (the project's gunicorn.conf.py, 2 workers, DEBUG off): median and p95 of REPEATS requests,
the queries one such request makes (counted in-process through Django's test client, the same
code path), and each figure's growth from 10K to 100K. Last, the resident memory of an idle
gunicorn worker (just started, and again after serving everything).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django

django.setup()

import httpx
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, setup_test_environment

from annotation.labelling import workflows
from annotation.labelling.models import Annotation
from annotation.recording.models import Item, Take
from webapp.models import User
from webapp.roles import Role, grant_role

logging.getLogger("httpx").setLevel(logging.WARNING)
ANNOTATORS = 30
GUNICORN_OPTIONS = ("-w", "2", "--timeout", "600", "--log-level", "warning")
REPEATS = 40
SCRIPT = "oh great, another Monday, I just love waiting in the rain."
EMOTIONS = ("happy", "sad", "angry", "surprise", "disgust", "fear", "neutral")
PERCEPTION_FORM = {
    "p_polarity": "negative",
    "p_emotion": "angry",
    "p_emotion_variant": "irritation",
    "p_intensity": "medium",
    "p_pitch": "high",
    "p_energy": "normal",
    "p_rate": "low",
    "p_intonation": "falling",
    "p_prosody_caption": "flat, drawn-out delivery with heavy stress on 'great'",
    "p_situation": "Dreading a wet Monday commute",
    "p_modality_conflict": "on",
    "p_conflict_kind": "sarcasm",
    "p_stressed_words": '["great", "love"]',
    "p_emotion_segments": "[]",
}
TOM_FORM = {
    "t_context": "Sarcastic complaint about the start of the week",
    "t_latent_need": "To have the frustration acknowledged",
    "t_core_demand": "Empathy, not advice",
    "t_constraints": "premature problem-solving",
    "s_emotional-validation": "recommended",
    "s_information": "not_recommended",
}
TARGETS = {  # the targets, for the last column
    "annotator queue page": "<= 20 ms",
    "workbench": "<= 15 ms",
    "submit from the workbench": "<= 15 ms, <= 6 q",
    "autosave": "<= 10 ms",
    "own-annotations API": "<= 15 ms",
}


@dataclass(frozen=True)
class Figure:
    name: str
    median_ms: float
    p95_ms: float
    queries: int
    cpu_ms: float  # CPU of the gunicorn workers and the database backends per request: load-independent


def item_file(first: int, count: int) -> bytes:
    lines = ["external_id,text,scenario,target_emotion,split"]
    for n in range(first, first + count):
        split = ("test", "dev", "train")[n % 3]
        lines.append(f'EE-{n:06d},"Utterance {n}: {SCRIPT}",modality-conflict,{EMOTIONS[n % 7]},{split}')
    return ("\n".join(lines) + "\n").encode()


def contours() -> dict[str, object]:
    times = [round(0.01 * step, 2) for step in range(200)]
    return {
        "pitch": {"times": times, "hz": [200.0 + step % 40 for step in range(200)]},
        "intensity": {"times": times, "db": [60.0 + step % 10 for step in range(200)]},
    }


def build_annotations(annotators: list[User], actor: User) -> None:
    """Record the first 10,000 items (accepted takes) and give each 3 annotations: 30,000 in all."""
    items = list(Item.objects.order_by("pk")[:10_000])
    shape = contours()
    features = {"pitch_level": "high", "energy_level": "normal", "rate_level": "low", "intonation": "falling"}
    takes = Take.objects.bulk_create(
        [
            Take(
                item=item,
                actor=actor,
                status=Take.Status.ACCEPTED,
                audio_key=f"audio/take/bench{item.pk}.wav",
                original_key=f"audio/take/bench{item.pk}.wav",
                duration_seconds=2.0,
                features=features,
                contours=shape,
            )
            for item in items
        ],
        batch_size=2000,
    )
    for item, take in zip(items, takes, strict=True):
        item.recording, item.state = take, Item.State.ANNOTATING
    Item.objects.bulk_update(items, ["recording", "state"], batch_size=2000)
    statuses = (Annotation.Status.ASSIGNED, Annotation.Status.DRAFT, Annotation.Status.SUBMITTED)
    Annotation.objects.bulk_create(
        [
            Annotation(
                item=item,
                annotator=annotators[(index * 3 + k) % ANNOTATORS],
                status=statuses[(index + k) % 3],
            )
            for index, item in enumerate(items)
            for k in range(3)
        ],
        batch_size=5000,
    )


class Gunicorn:
    """gunicorn serving the bench database on a free port; its workers' memory can be read."""

    def __init__(self, database_url: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": django_settings.SECRET_KEY,  # the sessions made here must be valid there
        }
        self.process = subprocess.Popen(
            [
                str(ROOT / ".venv/bin/gunicorn"),
                "webapp.wsgi",
                "-b",
                f"127.0.0.1:{self.port}",
                *GUNICORN_OPTIONS,
            ],
            cwd=ROOT,
            env=env,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(self.base + "/accounts/login/", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        else:
            raise SystemExit("gunicorn did not start")

    def worker_pids(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return [int(pid) for pid in children]

    def worker_rss_mib(self) -> list[float]:
        sizes = []
        for pid in self.worker_pids():
            status = Path(f"/proc/{pid}/status").read_text()
            sizes.append(int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024)  # type: ignore[union-attr]
        return sizes

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def http_client(base: str, user: User) -> httpx.Client:
    """Return an HTTP client logged in as `user` (a session made in-process) with a CSRF cookie."""
    django_client = Client()
    django_client.force_login(user)
    token = "b" * 32  # a CSRF secret of the right shape; the header repeats the cookie, as a page's JS would
    cookies = {"sessionid": django_client.cookies["sessionid"].value, "csrftoken": token}
    return httpx.Client(base_url=base, timeout=600, cookies=cookies, headers={"X-CSRFToken": token})


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


def serving_pids(server: Gunicorn) -> list[int]:
    """Return the gunicorn workers and the PostgreSQL backends connected to the bench database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        backends = [row[0] for row in cursor.fetchall()]
    return server.worker_pids() + backends


def timed(
    server: Gunicorn, run: Callable[[], httpx.Response], expected: int = 200
) -> tuple[float, float, float]:
    """Return the median and p95 milliseconds of REPEATS requests, and the serving CPU ms per request."""
    for _ in range(3):
        run()
    pids = serving_pids(server)
    cpu_before = cpu_seconds(pids)
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        response = run()
        times.append((time.perf_counter() - started) * 1000.0)
        if response.status_code != expected:
            raise SystemExit(f"{response.request.url} answered {response.status_code}")
    cpu_ms = (cpu_seconds(pids) - cpu_before) * 1000.0 / REPEATS
    return statistics.median(times), statistics.quantiles(times, n=20)[-1], cpu_ms


def queries_of(run: Callable[[Client], object], user: User) -> int:
    client = Client()
    client.force_login(user)
    with CaptureQueriesContext(connection) as captured:
        run(client)
    return len(captured)


def measure(server: Gunicorn, annotator: User) -> list[Figure]:
    http = http_client(server.base, annotator)
    open_ids = list(
        Annotation.objects.open_queue_of(annotator).values_list("pk", flat=True)[: 2 * REPEATS + 20]
    )
    draft = workflows.open_annotation(Annotation.objects.get(pk=open_ids.pop()))
    queue = "/annotate/?show=open"
    workbench = f"/annotate/{draft.pk}/"
    api = "/api/annotations/"
    figures = []
    for name, url in (
        ("annotator queue page", queue),
        ("workbench", workbench),
        ("own-annotations API", api),
    ):

        def get(client: Any, url: str = url) -> Any:
            return client.get(url)

        median, p95, cpu = timed(server, functools.partial(get, http))
        figures.append(Figure(name, median, p95, queries_of(get, annotator), cpu))

    versions = {"current": Annotation.objects.get(pk=draft.pk).version}

    def autosave(client: Any) -> Any:
        data = {
            **PERCEPTION_FORM,
            "p_situation": f"draft {time.perf_counter()}",
            "version": str(versions["current"]),
        }
        response = client.post(f"/annotate/{draft.pk}/autosave/", data=data)
        found = re.search(rb'name="version" value="(\d+)"', response.content)
        versions["current"] = int(found.group(1)) if found else versions["current"]
        return response

    median, p95, cpu = timed(server, lambda: autosave(http))
    figures.append(Figure("autosave", median, p95, queries_of(autosave, annotator), cpu))

    # Opened beforehand (opening is the workbench's GET), so a submit is measured alone.
    opened = [
        workflows.open_annotation(annotation) for annotation in Annotation.objects.filter(pk__in=open_ids)
    ]

    def submit(client: Any) -> Any:
        annotation = opened.pop()
        data = {**PERCEPTION_FORM, **TOM_FORM, "version": str(annotation.version)}
        return client.post(f"/annotate/{annotation.pk}/submit/", data=data)

    median, p95, cpu = timed(server, lambda: submit(http), expected=302)
    figures.append(Figure("submit from the workbench", median, p95, queries_of(submit, annotator), cpu))
    return figures


def import_rate(base: str, admin: User, data: bytes) -> float:
    client = http_client(base, admin)
    rows = data.count(b"\n") - 1
    started = time.perf_counter()
    response = client.post("/manage/items/import/", files={"file": ("items.csv", data, "text/csv")})
    elapsed = time.perf_counter() - started
    if f'data-testid="created">{rows}<'.encode() not in response.content:
        raise SystemExit(f"the import of {rows} rows did not go through ({response.status_code})")
    return rows / elapsed


def main() -> None:
    if connection.vendor != "postgresql":
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (postgres://...).")
    setup_test_environment()
    settings = connection.settings_dict
    settings.setdefault("TEST", {})["NAME"] = f"bench_scale_{settings['NAME']}"
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    credentials = quote(settings["USER"] or "") + (
        f":{quote(settings['PASSWORD'])}" if settings["PASSWORD"] else ""
    )
    url = f"postgres://{credentials}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{database}"
    server = None
    try:
        admin = User.objects.create_user(username="bench-admin")
        grant_role(admin, Role.ADMIN)
        annotators = []
        for n in range(ANNOTATORS):
            annotators.append(User.objects.create_user(username=f"bench-annotator-{n}"))
            grant_role(annotators[-1], Role.ANNOTATOR)
        actor = User.objects.create_user(username="bench-actor")
        grant_role(actor, Role.VOICE_ACTOR)
        server = Gunicorn(url)
        boot_rss = server.worker_rss_mib()

        rate_10k = import_rate(server.base, admin, item_file(0, 10_000))
        build_annotations(annotators, actor)
        connection.cursor().execute("VACUUM ANALYZE")  # a steady-state database: visibility map set
        small = measure(server, annotators[0])
        rate_100k = import_rate(server.base, admin, item_file(10_000, 90_000))
        connection.cursor().execute("VACUUM ANALYZE")  # a steady-state database: visibility map set
        large = measure(server, annotators[0])
        time.sleep(2)
        served_rss = server.worker_rss_mib()

        print(
            f"\nitems {Item.objects.count():,}, annotations {Annotation.objects.count():,}; load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
        print(
            f"item import through the page: {rate_10k:,.0f} rows/s (10,000 rows into an empty studio), "
            f"{rate_100k:,.0f} rows/s (90,000 more); target >= 20,000"
        )
        print(
            f"\n{'measure':26} {'10K median':>10} {'p95':>6} {'cpu':>6} {'q':>2} {'100K median':>11} {'p95':>6} "
            f"{'cpu':>6} {'q':>2} {'growth':>6}  target"
        )
        for a, b in zip(small, large, strict=True):
            print(
                f"{a.name:26} {a.median_ms:>8.1f}ms {a.p95_ms:>6.1f} {a.cpu_ms:>6.1f} {a.queries:>2} "
                f"{b.median_ms:>9.1f}ms {b.p95_ms:>6.1f} {b.cpu_ms:>6.1f} {b.queries:>2} "
                f"{b.median_ms / a.median_ms:>5.2f}x  {TARGETS[a.name]}"
            )
        print("(ms; cpu: CPU ms per request of the gunicorn workers and their PostgreSQL backends together,")
        print(" what a request costs on an idle machine; median and p95 are wall time at the load above)")
        print(
            f"\nidle gunicorn worker RSS: {max(boot_rss):.0f} MiB after start, {max(served_rss):.0f} MiB after "
            "serving all of the above; target <= 150 MiB"
        )
        steady = all(a.queries == b.queries for a, b in zip(small, large, strict=True))
        print(f"query counts independent of the data size: {'yes' if steady else 'NO'}")
    finally:
        if server is not None:
            server.stop()
        if "--keep" in sys.argv:  # to look at query plans afterwards
            print(f"kept the database {database}")
        else:
            connection.creation.destroy_test_db(database, verbosity=0)


if __name__ == "__main__":
    main()
