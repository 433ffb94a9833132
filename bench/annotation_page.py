"""Server time and query counts of the annotation pages, small and at 10,000 items / 30,000 annotations.

Run against PostgreSQL (a throwaway database "bench_<name>" is created next to the one DATABASE_URL
names, and dropped afterwards):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio .venv/bin/python bench/annotation_page.py

Prints, for each page, the number of SQL queries and the median server time (Django's test client:
URL routing, middleware, view, template; no network) at a small scale and at full scale. The query
counts must be the same at both scales: the queues paginate and join their items.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django

django.setup()

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, setup_test_environment
from django.urls import reverse

from annotation.labelling.models import Annotation
from annotation.recording.models import Item, Take
from webapp.lib.vocabulary import SCENARIOS
from webapp.models import User
from webapp.roles import Role, grant_role

ANNOTATORS = 30
REPEATS = 15
CONTOUR_POINTS = 200


@dataclass(frozen=True)
class Measurement:
    page: str
    items: int
    annotations: int
    queries: int
    median_ms: float


def contours() -> dict[str, object]:
    times = [round(0.01 * step, 2) for step in range(CONTOUR_POINTS)]
    return {
        "pitch": {"times": times, "hz": [200.0 + step % 40 for step in range(CONTOUR_POINTS)]},
        "intensity": {"times": times, "db": [60.0 + step % 10 for step in range(CONTOUR_POINTS)]},
    }


def build(first: int, count: int, annotators: list[User], actor: User) -> None:
    """Add `count` recorded items (ids from `first`), each with an accepted take and 3 annotations."""
    items = Item.objects.bulk_create(
        [
            Item(
                external_id=f"EE-{n:05d}",
                text=f"Utterance number {n}: oh great, another Monday, I just love waiting in the rain.",
                scenario=SCENARIOS[n % len(SCENARIOS)],
                target_emotion="angry",
                state=Item.State.ANNOTATING,
            )
            for n in range(first, first + count)
        ],
        batch_size=2000,
    )
    shape = contours()
    takes = Take.objects.bulk_create(
        [
            Take(
                item=item,
                actor=actor,
                status=Take.Status.ACCEPTED,
                audio_key=f"audio/take/bench{item.pk}.wav",
                original_key=f"audio/take/bench{item.pk}.wav",
                duration_seconds=2.0,
                features={
                    "pitch_level": "high",
                    "energy_level": "normal",
                    "rate_level": "low",
                    "intonation": "falling",
                },
                contours=shape,
            )
            for item in items
        ],
        batch_size=2000,
    )
    for item, take in zip(items, takes, strict=True):
        item.recording = take
    Item.objects.bulk_update(items, ["recording"], batch_size=2000)
    # Every tenth item is fully submitted (ready for adjudication); the others are in progress.
    statuses = (Annotation.Status.ASSIGNED, Annotation.Status.DRAFT, Annotation.Status.SUBMITTED)
    Annotation.objects.bulk_create(
        [
            Annotation(
                item=item,
                annotator=annotators[(index * 3 + k) % len(annotators)],
                status=Annotation.Status.SUBMITTED if index % 10 == 0 else statuses[(index + k) % 3],
                version=1,
            )
            for index, item in enumerate(items, start=first)
            for k in range(3)
        ],
        batch_size=5000,
    )


def measure(client: Client, url: str) -> tuple[int, float]:
    """Return (queries of one request, median milliseconds over REPEATS requests after a warm-up)."""
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"{url} answered {response.status_code}")
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    # Counted now: the captured list is a slice of a log that the next request resets.
    query_count = len(queries)
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        client.get(url)
        times.append((time.perf_counter() - started) * 1000.0)
    return query_count, statistics.median(times)


def measure_all(annotator: User, lead: User) -> list[Measurement]:
    annotator_client, lead_client = Client(), Client()
    annotator_client.force_login(annotator)
    lead_client.force_login(lead)
    draft = (
        Annotation.objects.filter(annotator=annotator, status=Annotation.Status.DRAFT).order_by("-pk").first()
    )
    assert draft is not None
    pages: list[tuple[str, Client, Callable[[], str]]] = [
        ("annotator queue", annotator_client, lambda: reverse("annotation:annotator_queue")),
        (
            "annotator queue, page 20",
            annotator_client,
            lambda: reverse("annotation:annotator_queue") + "?page=20",
        ),
        ("annotation workbench", annotator_client, lambda: reverse("annotation:workbench", args=[draft.pk])),
        (
            "adjudication queue (in progress)",
            lead_client,
            lambda: reverse("annotation:adjudication_queue") + "?show=in_progress",
        ),
        ("adjudication queue (ready)", lead_client, lambda: reverse("annotation:adjudication_queue")),
    ]
    items, annotations = Item.objects.count(), Annotation.objects.count()
    results = []
    for name, client, url in pages:
        queries, median_ms = measure(client, url())
        results.append(Measurement(name, items, annotations, queries, median_ms))
    return results


def main() -> None:
    if connection.vendor != "postgresql":
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (postgres://...).")
    setup_test_environment()
    # A name of its own, so a test run on the same server never meets this database.
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_{connection.settings_dict['NAME']}"
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        annotators = []
        for n in range(ANNOTATORS):
            user = User.objects.create_user(username=f"bench-annotator-{n}")
            grant_role(user, Role.ANNOTATOR)
            annotators.append(user)
        lead = User.objects.create_user(username="bench-lead")
        grant_role(lead, Role.LEAD_ANNOTATOR)
        actor = User.objects.create_user(username="bench-actor")

        build(0, 1000, annotators, actor)
        first_draft = Annotation.objects.filter(status=Annotation.Status.DRAFT).order_by("pk").first()
        assert first_draft is not None
        annotator = first_draft.annotator
        small = measure_all(annotator, lead)
        started = time.perf_counter()
        build(1000, 9000, annotators, actor)
        print(f"built 9,000 more items and 27,000 annotations in {time.perf_counter() - started:.1f} s")
        connection.cursor().execute("ANALYZE")
        large = measure_all(annotator, lead)

        print(f"\n{'page':36} {'items':>7} {'annotations':>12} {'queries':>8} {'median ms':>10}")
        for row in [*small, *large]:
            print(
                f"{row.page:36} {row.items:>7,} {row.annotations:>12,} {row.queries:>8} {row.median_ms:>10.1f}"
            )
        steady = all(a.queries == b.queries for a, b in zip(small, large, strict=True))
        print(f"\nquery counts independent of the data size: {'yes' if steady else 'NO'}")
        if not steady:
            raise SystemExit(1)
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)


if __name__ == "__main__":
    main()
