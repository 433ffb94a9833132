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
from bench.servers import ROOT, gunicorn, postgres_urls, throwaway_database

ANNOTATORS, ANNOTATIONS_EACH = 50, 20
REVIEWERS, TAKES = 10, 40
GOLD_ITEMS = 40
BENCH_DATABASE = "bench_concurrency"


def perception(marker: str) -> dict[str, Any]:
    """A complete perception document for the seeded script, marked so a stored copy can be told apart."""
    from tests.annotation.labelling.support import perception as complete_perception

    return complete_perception(situation=marker)


def tom(marker: str) -> dict[str, Any]:
    from tests.annotation.labelling.support import tom as complete_tom

    return complete_tom(context=marker)


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


@dataclass
class Seeded:
    annotator_cookies: list[dict[str, str]]
    reviewer_cookies: list[dict[str, str]]
    admin_cookies: dict[str, str]
    gold_item_ids: list[int]


def seed() -> Seeded:
    """Create the people and the work (runs inside this process, on the bench database)."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from annotation.labelling.models import Annotation
    from annotation.recording.models import Item, Review, Take
    from tests.annotation.labelling.support import SCRIPT
    from webapp.models import User
    from webapp.roles import Role, grant_role

    def person(name: str, *roles: Role) -> User:
        user = User.objects.create_user(username=name, password=secrets.token_urlsafe(16))
        for role in roles:
            grant_role(user, role)
        return user

    def cookies_for(user: User) -> dict[str, str]:
        # A logged-in session made the way django.contrib.auth.login makes one, without the
        # login form (whose throttling would treat 61 logins in a second as an attack).
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]  # the password backend
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        return {settings.SESSION_COOKIE_NAME: session.session_key or "", settings.CSRF_COOKIE_NAME: "b" * 32}

    annotators = [person(f"annotator{n}", Role.ANNOTATOR) for n in range(ANNOTATORS)]
    reviewers = [person(f"reviewer{n}", Role.REVIEWER) for n in range(REVIEWERS)]
    admin = person("admin", Role.ADMIN, Role.LEAD_ANNOTATOR)
    actor = person("actor", Role.VOICE_ACTOR)
    helpers = [person(f"helper{n}", Role.ANNOTATOR) for n in range(3)]

    features = {"pitch_level": "high", "energy_level": "normal", "rate_level": "low", "intonation": "falling"}

    def recorded(prefix: str, count: int, state: str, take_status: str) -> tuple[list[Item], list[Take]]:
        """`count` items of SCRIPT with one take each (their recording, once the take is accepted)."""
        fixed = {"text": SCRIPT, "scenario": "modality-conflict", "target_emotion": "angry", "state": state}
        items = Item.objects.bulk_create(
            [Item(external_id=f"{prefix}-{n:05d}", **fixed) for n in range(count)]
        )
        key = "audio/take/bench-{}.wav"
        takes = Take.objects.bulk_create(
            Take(item=item, actor=actor, status=take_status, audio_key=key.format(item.pk),
                 original_key=key.format(item.pk), duration_seconds=2.0, features=features)
            for item in items
        )  # fmt: skip
        if take_status == Take.Status.ACCEPTED:
            for item, take in zip(items, takes, strict=True):
                item.recording = take
            Item.objects.bulk_update(items, ["recording"])
        return items, takes

    def annotations(items: list[Item], who: Callable[[int], list[User]], status: str, marker: str) -> None:
        Annotation.objects.bulk_create(
            Annotation(item=item, annotator=user, status=status, perception=perception(marker), tom=tom(marker),
                       version=1)
            for index, item in enumerate(items)
            for user in who(index)
        )  # fmt: skip

    labelled, _ = recorded("LAB", ANNOTATORS * ANNOTATIONS_EACH, Item.State.ANNOTATING, Take.Status.ACCEPTED)
    annotations(
        labelled, lambda index: [annotators[index // ANNOTATIONS_EACH]], Annotation.Status.DRAFT, "start"
    )
    _, in_review = recorded("REV", TAKES, Item.State.IN_REVIEW, Take.Status.IN_REVIEW)
    Review.objects.bulk_create(
        Review(take=take, reviewer=reviewers[(index + k * 3) % REVIEWERS])
        for index, take in enumerate(in_review)
        for k in range(3)
    )
    agreeing, _ = recorded("GLD", GOLD_ITEMS, Item.State.ANNOTATING, Take.Status.ACCEPTED)
    annotations(agreeing, lambda index: helpers, Annotation.Status.SUBMITTED, "agreed")
    return Seeded(
        annotator_cookies=[cookies_for(user) for user in annotators],
        reviewer_cookies=[cookies_for(user) for user in reviewers],
        admin_cookies=cookies_for(admin),
        gold_item_ids=[item.pk for item in agreeing],
    )


def client(base_url: str, cookies: dict[str, str]) -> httpx.Client:
    return httpx.Client(
        base_url=base_url,
        cookies=cookies,
        headers={"X-CSRFToken": "b" * 32, "Referer": base_url + "/"},
        timeout=60,
    )


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


def rows_of(response: httpx.Response) -> list[dict[str, Any]]:
    if response.status_code != 200:
        raise SystemExit(f"{response.request.url} answered {response.status_code}: {response.text[:300]}")
    listing = response.json()
    return listing["results"] if isinstance(listing, dict) else listing


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


def admin_day(base_url: str, cookies: dict[str, str], record: Record, item_ids: list[int]) -> None:
    with client(base_url, cookies) as http:
        for item_id in item_ids:
            url = f"/adjudicate/{item_id}/fast-track/"
            answers = twice_at_once(record, "fast-track", partial(http.post, url, data={"version": "0"}))
            # Success redirects to the queue; a refusal back to the item's page with the reason.
            record.race(
                "double fast-track",
                race_outcome(answers, partial(fast_tracked, item_id)),
            )


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
        "CELERY_BROKER_URL": f"filesystem://{var_dir}/broker",
    }
    env.pop("ECHOSTUDIO_PRODUCTION", None)
    os.environ.update(env)
    with throwaway_database(server_url, BENCH_DATABASE):
        migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
        subprocess.run(migrate, cwd=ROOT, env=env, check=True)
        seeded = seed()
        # Django's logging setup shows every httpx request at INFO; the table below is the report.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        with gunicorn(env, var_dir / "gunicorn.log") as base_url:
            record = Record()
            stored: dict[int, str] = {}
            verdicts: dict[str, str] = {}
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
                    people.submit(admin_day, base_url, seeded.admin_cookies, record, seeded.gold_item_ids)
                )
                for job in jobs:
                    job.result()
            elapsed = time.perf_counter() - started
        problems = check(stored, verdicts, seeded.gold_item_ids)

    requests = sum(sum(counter.values()) for counter in record.statuses.values())
    server_errors = sum(
        n for counter in record.statuses.values() for status, n in counter.items() if status >= 500
    )
    print(
        f"\n{requests:,} requests in {elapsed:.1f} s from {ANNOTATORS} annotators, {REVIEWERS} reviewers, 1 admin"
    )
    print(f"\n{'request':24} {'count':>6} {'p50 ms':>8} {'p95 ms':>8}  statuses")
    for kind, times in sorted(record.latencies.items()):
        ordered = sorted(times)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(record.statuses[kind].items()))
        print(f"{kind:24} {len(times):>6} {statistics.median(times):>8.1f} {p95:>8.1f}  {statuses}")
    print("\nraces (two identical requests at once)")
    for kind, outcomes in sorted(record.races.items()):
        print(f"  {kind:22} " + ", ".join(f"{outcome}: {n}" for outcome, n in outcomes.most_common()))
    print("\nafter the run")
    for name, count in problems.items():
        print(f"  {name:44} {count}")
    print(f"  {'5xx responses':44} {server_errors}")
    failed = server_errors or any(count for name, count in problems.items())
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
