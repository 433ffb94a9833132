"""Server time of each annotator-facing request, in-process, with its query count and a profile (issue 27).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio nice .venv/bin/python bench/request_profile.py \
        [--sizes 10000,100000] [--repeats 60] [--profile "workbench"] [--keep-sqlite]

A throwaway database "bench_requests_<name>" is created next to the one DATABASE_URL names (dropped
afterwards; without DATABASE_URL a scratch SQLite file). Items grow through the sizes; 30,000
annotations (3 on each of the first 10,000 items, 30 annotators, accepted takes with display
contours) stay the same. Each request goes through Django's test client in this process with
what a server does around it (`close_old_connections`, as the request_started signal runs it:
the connection health check), so the time is server time without the network: median and p95
of REPEATS requests, and the queries of one. `--profile NAME` prints the hottest functions of
that request (cProfile over REPEATS requests, at the last size). Figures, not a test.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ["DJANGO_DEBUG"] = "0"
if not os.environ.get("DATABASE_URL"):
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/requests.sqlite3"

import django

django.setup()

from django.core.management import call_command
from django.db import close_old_connections, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.gold.models import GoldReference
from annotation.labelling import workflows
from annotation.labelling.models import Annotation
from annotation.recording.models import Item, Take
from bench.request_breakdown import Breakdown, installed, print_breakdown
from webapp.lib.vocabulary import SCENARIOS, SPLITS
from webapp.models import User
from webapp.roles import Role, grant_role

ANNOTATORS = 30
LABELLED_ITEMS = 10_000
SCRIPT = "oh great, another Monday, I just love waiting in the rain."
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
PERCEPTION_JSON = {
    "polarity": "negative",
    "emotion": "angry",
    "emotion_variant": "irritation",
    "intensity": "medium",
    "pitch": "high",
    "energy": "normal",
    "rate": "low",
    "intonation": "falling",
    "prosody_caption": "flat, drawn-out delivery",
    "situation": "Dreading a wet Monday commute",
    "modality_conflict": True,
    "conflict_kind": "sarcasm",
    "stressed_words": ["great"],
    "emotion_segments": [],
}
TOM_JSON = {
    "context": "Sarcastic complaint",
    "latent_need": "To be heard",
    "core_demand": "Empathy",
    "constraints": ["premature problem-solving"],
    "recommended_strategies": ["emotional-validation"],
    "not_recommended_strategies": ["information"],
}


@dataclass(frozen=True)
class Figure:
    name: str
    median_ms: float
    p95_ms: float
    min_ms: float  # on a busy machine the fastest request is the nearest to the unloaded time
    cpu_ms: float  # this process's CPU per request (median): what a loaded machine inflates least
    queries: int


def add_items(first: int, count: int) -> None:
    Item.objects.bulk_create(
        (
            Item(
                external_id=f"EE-{n:06d}",
                text=f"Utterance {n}: {SCRIPT}",
                scenario=SCENARIOS[n % len(SCENARIOS)] if n >= LABELLED_ITEMS else "modality-conflict",
                split=SPLITS[n % len(SPLITS)],
                target_emotion="angry",
            )
            for n in range(first, first + count)
        ),
        batch_size=5000,
    )


def contours() -> dict[str, object]:
    times = [round(0.01 * step, 2) for step in range(200)]
    return {
        "pitch": {"times": times, "hz": [200.0 + step % 40 for step in range(200)]},
        "intensity": {"times": times, "db": [60.0 + step % 10 for step in range(200)]},
    }


def label_first_items(annotators: list[User], actor: User) -> None:
    """Accepted takes (with contours) on the first LABELLED_ITEMS items, 3 annotations each, gold on every 20th."""
    items = list(Item.objects.order_by("pk")[:LABELLED_ITEMS])
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
                contours=contours(),
            )
            for item in items
        ],
        batch_size=2000,
    )
    for item, take in zip(items, takes, strict=True):
        item.recording, item.state = take, Item.State.ANNOTATING
    Item.objects.bulk_update(items, ["recording", "state"], batch_size=2000)
    statuses = (Annotation.Status.ASSIGNED, Annotation.Status.DRAFT, Annotation.Status.SUBMITTED)
    now = timezone.now()
    Annotation.objects.bulk_create(
        [
            Annotation(
                item=item,
                annotator=annotators[(i * 3 + k) % ANNOTATORS],
                status=statuses[(i + k) % 3],
                submitted_at=now if statuses[(i + k) % 3] == Annotation.Status.SUBMITTED else None,
            )
            for i, item in enumerate(items)
            for k in range(3)
        ],
        batch_size=5000,
    )
    GoldReference.objects.bulk_create(
        [GoldReference(item=item, version=1, is_current=True) for item in items[5::20]], batch_size=5000
    )


def timed(name: str, run: Callable[[Client], Any], client: Client, repeats: int, ok: int) -> Figure:
    for _ in range(3):
        close_old_connections()
        run(client)
    with CaptureQueriesContext(connection) as captured:
        run(client)
    queries = len(captured)
    times, cpu = [], []
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        close_old_connections()  # what request_started does on a server (the test client leaves it out)
        response = run(client)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        if response.status_code != ok:
            raise SystemExit(f"{name} answered {response.status_code}: {response.content[:300]!r}")
    p95 = statistics.quantiles(times, n=20)[-1]
    return Figure(name, statistics.median(times), p95, min(times), statistics.median(cpu), queries)


def cases(annotator: User, repeats: int) -> list[tuple[str, Callable[[Client], Any], int, str]]:
    """(name, request, expected status, who sends it) of every measured request."""
    open_ids = list(Annotation.objects.open_queue_of(annotator).values_list("pk", flat=True))
    draft = workflows.open_annotation(Annotation.objects.get(pk=open_ids.pop()))
    rest_draft = workflows.open_annotation(Annotation.objects.get(pk=open_ids.pop()))
    per_run = 2 * repeats + 10  # the timed run and the breakdown's each submit a fresh annotation
    form_submits = [
        workflows.open_annotation(a) for a in Annotation.objects.filter(pk__in=open_ids[:per_run])
    ]
    rest_submits = [
        workflows.open_annotation(a)
        for a in Annotation.objects.filter(pk__in=open_ids[per_run : 2 * per_run])
    ]
    gold_item = GoldReference.objects.filter(is_current=True).select_related("item").first().item  # type: ignore[union-attr]
    versions = {"form": draft.version, "rest": rest_draft.version}

    def autosave(client: Client) -> Any:
        data = {
            **PERCEPTION_FORM,
            "p_situation": f"draft {time.perf_counter()}",
            "version": str(versions["form"]),
        }
        response = client.post(f"/annotate/{draft.pk}/autosave/", data=data)
        versions["form"] += 1
        return response

    def autosave_rest(client: Client) -> Any:
        body = {
            "version": versions["rest"],
            "perception": {"situation": f"d {time.perf_counter()}"},
            "tom": {},
        }
        response = client.put(
            f"/api/annotations/{rest_draft.pk}/", data=body, content_type="application/json"
        )
        versions["rest"] += 1
        return response

    def submit(client: Client) -> Any:
        annotation = form_submits.pop()
        data = {**PERCEPTION_FORM, **TOM_FORM, "version": str(annotation.version)}
        return client.post(f"/annotate/{annotation.pk}/submit/", data=data)

    def submit_rest(client: Client) -> Any:
        annotation = rest_submits.pop()
        body = {"version": annotation.version, "perception": PERCEPTION_JSON, "tom": TOM_JSON}
        return client.post(
            f"/api/annotations/{annotation.pk}/submit/", data=body, content_type="application/json"
        )

    def get(url: str) -> Callable[[Client], Any]:
        return lambda client: client.get(url)

    return [
        ("queue page", get("/annotate/?show=open"), 200, "annotator"),
        ("queue page, submitted tab", get("/annotate/?show=submitted"), 200, "annotator"),
        ("workbench", get(f"/annotate/{draft.pk}/"), 200, "annotator"),
        ("autosave (form)", autosave, 200, "annotator"),
        ("autosave (REST PUT)", autosave_rest, 200, "annotator"),
        ("submit (form)", submit, 302, "annotator"),
        ("submit (REST)", submit_rest, 200, "annotator"),
        ("my annotations API, 30", get("/api/annotations/?page_size=30"), 200, "annotator"),
        ("one annotation API", get(f"/api/annotations/{draft.pk}/"), 200, "annotator"),
        ("items list API, 30", get("/api/items/?page_size=30"), 200, "admin"),
        ("one item API (with gold)", get(f"/api/items/{gold_item.external_id}/"), 200, "admin"),
    ]


def measure(users: dict[str, User], repeats: int, profile: str, breakdown: str = "") -> list[Figure]:
    clients = {}
    for who, user in users.items():
        clients[who] = Client()
        clients[who].force_login(user)
    figures = []
    for name, run, ok, who in cases(users["annotator"], repeats):
        figures.append(timed(name, run, clients[who], repeats, ok))
        if breakdown == "all" or name in breakdown.split(";"):
            print_breakdown_of(name, run, clients[who], repeats, figures[-1].cpu_ms)
        if name == profile:
            print_profile(name, run, clients[who], repeats)
    return figures


def print_breakdown_of(
    name: str, run: Callable[[Client], Any], client: Client, repeats: int, cpu_ms: float
) -> None:
    parts = Breakdown()
    with installed(parts):
        # The handler's chain is rebuilt over the wrapped methods (and again after, without them).
        client.handler._middleware_chain = None  # type: ignore[attr-defined]
        for _ in range(repeats):
            with parts.request():
                close_old_connections()
                run(client)
    client.handler._middleware_chain = None  # type: ignore[attr-defined]
    print_breakdown(name, parts, cpu_ms)


def print_profile(name: str, run: Callable[[Client], Any], client: Client, repeats: int) -> None:
    # A fresh set of writes for submits would be needed to profile them; reads and autosaves repeat.
    profiler = cProfile.Profile()
    for _ in range(repeats if "submit" not in name else 4):
        profiler.enable()
        close_old_connections()
        run(client)
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(45)
    print(f"\n--- profile of {name} ---\n{out.getvalue()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument("--profile", default="")
    parser.add_argument(
        "--breakdown",
        default="",
        help='"all", or request names joined by ";": CPU per part (request_breakdown)',
    )
    parser.add_argument("--keep", action="store_true", help="keep the database for --reuse")
    parser.add_argument("--reuse", action="store_true", help="measure a kept database at its size, migrated")
    options = parser.parse_args()
    sizes = [int(size) for size in options.sizes.split(",")]
    settings = connection.settings_dict
    settings.setdefault("TEST", {})["NAME"] = f"bench_requests_{Path(str(settings['NAME'])).stem}"
    if options.reuse:
        database = settings["TEST"]["NAME"]
        settings["NAME"] = database
        connection.close()
        call_command("migrate", verbosity=0)
        sizes = [Item.objects.count()]
    else:
        database = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        if options.reuse:
            users = {
                "annotator": User.objects.get(username="bench-annotator-0"),
                "admin": User.objects.get(username="bench-admin"),
            }
            report(sizes, {sizes[0]: measure(users, options.repeats, options.profile, options.breakdown)})
            return
        annotators = [User.objects.create_user(username=f"bench-annotator-{n}") for n in range(ANNOTATORS)]
        for user in annotators:
            grant_role(user, Role.ANNOTATOR)
        admin = User.objects.create_user(username="bench-admin")
        grant_role(admin, Role.ADMIN)
        actor = User.objects.create_user(username="bench-actor")
        grant_role(actor, Role.VOICE_ACTOR)
        results: dict[int, list[Figure]] = {}
        made = 0
        for size in sizes:
            add_items(made, size - made)
            if made == 0:
                label_first_items(annotators, actor)
            made = size
            if connection.vendor == "postgresql":
                connection.cursor().execute("VACUUM ANALYZE")
            profile = options.profile if size == sizes[-1] else ""
            breakdown = options.breakdown if size == sizes[-1] else ""
            results[size] = measure(
                {"annotator": annotators[0], "admin": admin}, options.repeats, profile, breakdown
            )
        report(sizes, results)
    finally:
        if options.keep or options.reuse:
            print(f"kept the database {database}")
        else:
            connection.creation.destroy_test_db(database, verbosity=0)


def report(sizes: list[int], results: dict[int, list[Figure]]) -> None:
    print(f"\n{connection.vendor}, load average {os.getloadavg()[0]:.1f}; ms: median, p95, min, CPU; queries")
    print(f"{'request':28}" + "".join(f"{f'{size:,} items':>36}" for size in sizes))
    for row in zip(*results.values(), strict=True):
        print(
            f"{row[0].name:28}"
            + "".join(
                f"{f.median_ms:>10.2f} {f.p95_ms:>6.2f} {f.min_ms:>6.2f} {f.cpu_ms:>6.2f} {f.queries:>4}"
                for f in row
            )
        )
    steady = all(len({f.queries for f in row}) == 1 for row in zip(*results.values(), strict=True))
    print(f"query counts independent of the data size: {'yes' if steady else 'NO'}")


if __name__ == "__main__":
    main()
