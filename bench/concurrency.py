"""Many people saving the same things at once, against gunicorn on PostgreSQL: nothing lost, nothing twice.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/concurrency.py

A throwaway database `bench_concurrency` is made on the server DATABASE_URL names (and dropped
afterwards), migrated, and seeded; gunicorn serves it with the production settings file
(gunicorn.conf.py). Then, all at once:

- 50 annotators each work through 20 annotations: autosave, then submit twice at the same moment
  (a double click, or two tabs);
- 10 reviewers give their verdicts on 40 takes, three reviewers a take, each verdict sent twice
  at the same moment, so the last verdicts of a take race each other and themselves;
- an admin fast-tracks 40 agreeing items to gold, each twice at the same moment.

Afterwards the database is read back and the script prints lost writes (a 200 whose data is not
stored), duplicates (one action stored twice: two revisions, two gold versions, a take decided
twice), 5xx answers (all must be 0), how each race ended, and p50/p95 latency per request kind.
"""

from __future__ import annotations

import logging
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from threading import Lock
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import faults
from bench.people import ANNOTATORS, REVIEWERS, client, perception, rows_of, seed, tom
from bench.servers import ROOT, gunicorn, postgres_urls, throwaway_database

BENCH_DATABASE = "bench_concurrency"
# The bench's own Redis database (the broker of the task-worker and broker faults).
BENCH_BROKER = "redis://127.0.0.1:6379/14"


@dataclass
class Record:
    """Every answer the clients got, by request kind."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    races: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    lock: Lock = field(default_factory=Lock)

    def add(self, kind: str, status: int, seconds: float) -> None:
        with self.lock:
            self.latencies[kind].append(seconds * 1000)
            self.statuses[kind][status] += 1

    def race(self, kind: str, outcome: str) -> None:
        with self.lock:
            self.races[kind][outcome] += 1


def timed(record: Record, kind: str, send: Callable[[], httpx.Response]) -> httpx.Response:
    started = time.perf_counter()
    response = send()
    record.add(kind, response.status_code, time.perf_counter() - started)
    return response


def twice_at_once(record: Record, kind: str, send: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """Send the same request twice at the same moment (a double click, two tabs)."""
    with ThreadPoolExecutor(2) as pair:
        return list(pair.map(lambda _: timed(record, kind, send), range(2)))


def race_outcome(responses: list[httpx.Response], succeeded: Callable[[httpx.Response], bool]) -> str:
    return " + ".join(sorted("ok" if succeeded(r) else str(r.status_code) for r in responses))


def annotator_day(base_url: str, cookies: dict[str, str], record: Record, stored: dict[int, str]) -> None:
    with client(base_url, cookies) as http:
        for row in rows_of(timed(record, "list own annotations", partial(http.get, "/api/annotations/"))):
            pk, version = row["id"], row["version"]
            draft, final = f"draft {pk}", f"final {pk}"
            labels = {"perception": perception(draft), "tom": tom(draft), "version": version}
            saved = timed(record, "autosave", partial(http.put, f"/api/annotations/{pk}/", json=labels))
            if saved.status_code == 200:
                stored[pk] = draft
                version = saved.json()["version"]
            labels = {"perception": perception(final), "tom": tom(final), "version": version}
            answers = twice_at_once(
                record, "submit", partial(http.post, f"/api/annotations/{pk}/submit/", json=labels)
            )
            if any(answer.status_code == 200 for answer in answers):
                stored[pk] = final
            record.race("double submit", race_outcome(answers, lambda r: r.status_code == 200))


def reviewer_day(base_url: str, cookies: dict[str, str], record: Record, verdicts: dict[str, str]) -> None:
    from annotation.recording.access import MAX_REVIEW_SPEED  # after django.setup() (in seed)

    with client(base_url, cookies) as http:
        rows = rows_of(timed(record, "list open reviews", partial(http.get, "/api/reviews/")))
        # Listing hands out the audio; a verdict waits until each take could have played to the end
        # (the playback gate), so the reviewer "listens" for the longest take at top speed.
        time.sleep(max((row["duration_seconds"] for row in rows), default=0.0) / MAX_REVIEW_SPEED)
        for index, row in enumerate(rows):
            review_id = row["id"]
            played = timed(record, "played", partial(http.post, f"/api/reviews/{review_id}/played/"))
            if played.status_code != 200:
                continue
            verdict = "reject" if index % 7 == 6 else "accept"
            body: dict[str, Any] = {"verdict": verdict}
            if verdict == "reject":
                body.update(reasons=["audio_quality"], comment="hum in the background")
            answers = twice_at_once(
                record, "verdict", partial(http.post, f"/api/reviews/{review_id}/verdict/", json=body)
            )
            if any(answer.status_code == 200 for answer in answers):
                verdicts[review_id] = verdict
            # The same verdict twice: the second may save it again (a verdict may change until the
            # take is decided) or be refused once the first decided the take; never two outcomes.
            record.race("double verdict", race_outcome(answers, lambda r: r.status_code == 200))


def leads_day(base_url: str, lead_cookies: list[dict[str, str]], record: Record, item_ids: list[int]) -> None:
    """Two leads fast-track the same items to gold at the same moment (an adjudication race)."""
    leads = [client(base_url, cookies) for cookies in lead_cookies]
    try:
        for item_id in item_ids:
            url = f"/adjudicate/{item_id}/fast-track/"
            with ThreadPoolExecutor(len(leads)) as both:
                answers = list(
                    both.map(
                        lambda http, url=url: timed(
                            record, "fast-track", partial(http.post, url, data={"version": "0"})
                        ),
                        leads,
                    )
                )
            # Success redirects to the queue; a refusal back to the item's page with the reason.
            record.race("two leads fast-track", race_outcome(answers, partial(fast_tracked, item_id)))
    finally:
        for http in leads:
            http.close()


def two_tabs(
    base_url: str, cookies: dict[str, str], pk: int, record: Record, winners: dict[int, str]
) -> None:
    """Autosave one annotation from two tabs at the same moment, each with labels of its own."""
    with client(base_url, cookies) as http:
        version = http.get(f"/api/annotations/{pk}/").json()["version"]

        def save(tab: str) -> tuple[str, httpx.Response]:
            body = {"perception": perception(f"{tab} {pk}"), "tom": tom(f"{tab} {pk}"), "version": version}
            return tab, timed(
                record, "two-tab autosave", partial(http.put, f"/api/annotations/{pk}/", json=body)
            )

        with ThreadPoolExecutor(2) as tabs:
            answers = list(tabs.map(save, ["tabA", "tabB"]))
    record.race("two-tab autosave", race_outcome([r for _, r in answers], lambda r: r.status_code == 200))
    saved = [f"{tab} {pk}" for tab, response in answers if response.status_code == 200]
    winners[pk] = saved[0] if len(saved) == 1 else f"{len(saved)} tabs were told they saved"


def fast_tracked(item_id: int, response: httpx.Response) -> bool:
    return response.status_code == 302 and f"/{item_id}/" not in response.headers["location"]


def check(stored: dict[int, str], verdicts: dict[str, str], gold_item_ids: list[int]) -> dict[str, int]:
    """Read the database back; return lost and duplicated writes by kind."""
    from django.db.models import Count

    from annotation.gold.models import GoldReference
    from annotation.labelling.models import Annotation, AnnotationRevision
    from annotation.recording.models import Item, Review, Take

    found = {
        pk: (perception_doc.get("situation"), status)
        for pk, perception_doc, status in Annotation.objects.filter(pk__in=stored).values_list(
            "pk", "perception", "status"
        )
    }
    lost_labels = sum(1 for pk, marker in stored.items() if found.get(pk, (None,))[0] != marker)
    unsubmitted = sum(1 for marker, status in found.values() if status != Annotation.Status.SUBMITTED)
    double_revisions = (
        AnnotationRevision.objects.values("annotation").annotate(n=Count("pk")).filter(n__gt=1).count()
    )
    stored_verdicts = {
        str(public_id): verdict
        for public_id, verdict in Review.objects.filter(public_id__in=verdicts).values_list(
            "public_id", "verdict"
        )
    }
    lost_verdicts = sum(1 for pk, verdict in verdicts.items() if stored_verdicts.get(pk) != verdict)
    undecided = Take.objects.filter(item__external_id__startswith="REV", status=Take.Status.IN_REVIEW).count()
    items_with_two_recordings = (
        Take.objects.filter(status=Take.Status.ACCEPTED, item__external_id__startswith="REV")
        .values("item")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .count()
    )
    gold_counts = Counter(
        GoldReference.objects.filter(item_id__in=gold_item_ids).values_list("item_id", flat=True)
    )
    return {
        "lost: labels a 200 reported saved": lost_labels,
        "lost: annotations left unsubmitted": unsubmitted,
        "lost: verdicts a 200 reported saved": lost_verdicts,
        "lost: takes left undecided": undecided,
        "lost: items fast-tracked but without gold": sum(1 for pk in gold_item_ids if gold_counts[pk] == 0),
        "duplicated: annotation revisions": double_revisions,
        "duplicated: items with two accepted takes": items_with_two_recordings,
        "duplicated: gold versions": sum(count - 1 for count in gold_counts.values() if count > 1),
        "items stuck in review": Item.objects.filter(
            external_id__startswith="REV", state=Item.State.IN_REVIEW
        ).count(),
    }


def main() -> None:
    server_url, bench_url = postgres_urls(BENCH_DATABASE)
    var_dir = Path(tempfile.mkdtemp(prefix="echostudio-concurrency-"))
    env = {
        **os.environ,
        "DATABASE_URL": bench_url,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_DEBUG": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "ECHOSTUDIO_VAR_DIR": str(var_dir),
        "CELERY_BROKER_URL": BENCH_BROKER,
        # A killed worker's job is found within seconds rather than a minute.
        "ECHOSTUDIO_JOB_HEARTBEAT_SECONDS": "0.5",
        "ECHOSTUDIO_JOB_STALE_AFTER_SECONDS": "3",
        "ECHOSTUDIO_JOB_REAP_EVERY_SECONDS": "1",
    }
    env.pop("ECHOSTUDIO_PRODUCTION", None)
    os.environ.update(env)
    if not faults.redis_answers():
        raise SystemExit("Redis must answer on 127.0.0.1:6379 (the broker of the fault phase).")
    with throwaway_database(server_url, BENCH_DATABASE):
        migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
        subprocess.run(migrate, cwd=ROOT, env=env, check=True)
        seeded = seed()
        # Django's logging setup shows every httpx request at INFO; the table below is the report.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        pids: list[int] = []
        with gunicorn(env, var_dir / "gunicorn.log", pids) as base_url:
            record = Record()
            stored: dict[int, str] = {}
            verdicts: dict[str, str] = {}
            tab_winners: dict[int, str] = {}
            started = time.perf_counter()
            with ThreadPoolExecutor(ANNOTATORS + REVIEWERS + 1) as people:
                jobs = [
                    people.submit(annotator_day, base_url, c, record, stored)
                    for c in seeded.annotator_cookies
                ]
                jobs += [
                    people.submit(reviewer_day, base_url, c, record, verdicts)
                    for c in seeded.reviewer_cookies
                ]
                jobs.append(
                    people.submit(leads_day, base_url, seeded.lead_cookies, record, seeded.gold_item_ids)
                )
                for job in jobs:
                    job.result()
            with ThreadPoolExecutor(16) as pairs:
                for done in [
                    pairs.submit(two_tabs, base_url, cookies, pk, record, tab_winners)
                    for pk, cookies in seeded.tab_race_cookies.items()
                ]:
                    done.result()
            elapsed = time.perf_counter() - started
            acknowledged, recovery, fault_jobs = faults.fault_phase(base_url, pids[0], env, var_dir, seeded)
        from django.db import connections

        connections.close_all()  # the database restarted under this process's connection too
        problems = {
            **check(stored, verdicts, seeded.gold_item_ids),
            **faults.acknowledged_problems(acknowledged, tab_winners),
        }

    requests = sum(sum(counter.values()) for counter in record.statuses.values())
    server_errors = sum(
        n for counter in record.statuses.values() for status, n in counter.items() if status >= 500
    )
    print(
        f"\n{requests:,} requests in {elapsed:.1f} s from {ANNOTATORS} annotators, {REVIEWERS} reviewers, 2 leads"
    )
    print(f"\n{'request':24} {'count':>6} {'p50 ms':>8} {'p95 ms':>8}  statuses")
    for kind, times in sorted(record.latencies.items()):
        ordered = sorted(times)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(record.statuses[kind].items()))
        print(f"{kind:24} {len(times):>6} {statistics.median(times):>8.1f} {p95:>8.1f}  {statuses}")
    print("\nraces (two requests at once)")
    for kind, outcomes in sorted(record.races.items()):
        print(f"  {kind:22} " + ", ".join(f"{outcome}: {n}" for outcome, n in outcomes.most_common()))
    print(
        f"\nfaults, under load ({len(acknowledged.labels)} annotations acknowledged, "
        f"{acknowledged.retries} retries with the same Idempotency-Key)"
    )
    cut = fault_jobs.pop("writes cut by each fault (sent again with their key)")
    for fault, seconds in recovery.items():
        back = f"answered again {seconds:.2f} s after the fault" if seconds else "no probe failed"
        print(f"  {fault:28} {back}; {cut.get(fault, 0)} writes cut and sent again")
    for name, outcome in fault_jobs.items():
        print(f"  job {name}: {outcome}")
    print("\nafter the run")
    for name, count in problems.items():
        print(f"  {name:52} {count}")
    print(f"  {'5xx responses (before the faults)':52} {server_errors}")
    killed = fault_jobs.get("killed mid-job", {})
    stuck = sum(
        n
        for status, n in fault_jobs.get("started while the broker was down", {}).items()
        if status != "succeeded"
    )
    failed = server_errors or stuck or any(problems.values()) or killed.get("status") != "succeeded"
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
