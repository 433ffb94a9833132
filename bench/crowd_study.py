"""Crowd raters at scale: simulated external raters working at once on gunicorn and PostgreSQL.

    DATABASE_URL=postgres://... python bench/crowd_study.py [--raters 500] [--threads 64] [--database NAME]

(the study lives in a throwaway database, `bench_crowd` unless --database names another: created,
then dropped, on the server of DATABASE_URL)

Each simulated rater opens the study's Prolific link with their own PROLIFIC_PID, consents, answers
the headphone and digits checks (right, as a listener with headphones would), then rates every
sample of their seat the way a browser does: open the page, fetch the reply's audio, wait its
length, report the playback, submit (every fifth sample twice at once, as a double click). It
prints the requests, p50/p95 latency per kind, and the ratings lost (acknowledged but not
stored) or doubled (more than one score per dimension), whose goal is 0. Then it times the ACR
analysis (rater screening and the summary with intervals) of 100,000 ratings, and the comparison
analysis (`comparison_reports.analyse`, as in bench/study_analysis.py) of 100,000 answers of each
of CMOS, A/B and MUSHRA, which crowd raters now answer too. `--analysis-only` times just those
(no PostgreSQL or gunicorn needed).
"""

from __future__ import annotations

import argparse
import html
import logging
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.servers import ROOT, gunicorn, postgres_urls, throwaway_database

BENCH_DATABASE = "bench_crowd"
ANALYSED_RATINGS = 100_000


class Record:
    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.statuses: dict[str, Counter[int]] = defaultdict(Counter)
        self.acknowledged: set[str] = set()

    def send(self, kind: str, call: httpx.Client, method: str, url: str, **kwargs: object) -> httpx.Response:
        started = time.perf_counter()
        response = call.request(method, url, **kwargs)  # type: ignore[arg-type]
        if kind == "audio":
            response.read()
        self.latencies[kind].append((time.perf_counter() - started) * 1000)
        self.statuses[kind][response.status_code] += 1
        return response


def seed(raters: int) -> tuple[str, str, list[str]]:
    """Create a 2-system study of 20 items opened to `raters` seats; return its token, completion code, dimensions."""
    import django

    django.setup()
    from evaluation.studies.crowd.platforms import Platform
    from evaluation.studies.crowd.workflows import open_to_crowd
    from tests.evaluation.studies.support import build_world, make_study
    from tests.factories import UserFactory
    from webapp.roles import grant_role

    counter = iter(range(10_000))

    def make_user(role: Any = None, name: str | None = None) -> Any:
        user = UserFactory.create(username=name or f"user{next(counter)}")
        if role is not None:
            grant_role(user, role)
        return user

    world = build_world(make_user, n_systems=2, n_items=20, prefix="B")
    admin = make_user("admin")
    study = make_study(
        world, [make_user("evaluator")], admin, items_per_system=20, dimensions=["naturalness"]
    )
    per_output = max(1, min(raters, 8 * raters // 40))  # about 8 rated samples per rater
    link = open_to_crowd(
        study, raters, Platform.PROLIFIC, requests_per_minute=100_000, ratings_per_output=per_output
    )
    return link.token, link.completion_code, list(study.dimensions)


def answers_for(external_id: str, token: str, test: str) -> dict[str, str]:
    from evaluation.studies.crowd.models import CrowdScreening
    from evaluation.studies.crowd.workflows import digit_triplets, headphone_trials

    screening = CrowdScreening.objects.get(
        rater__link__token=token, rater__external_id=external_id, test=test, finished_at__isnull=True
    )
    if test == "headphones":
        return {f"trial_{n}": str(t.answer) for n, t in enumerate(headphone_trials(screening), start=1)}
    return {f"trial_{n}": t.answer for n, t in enumerate(digit_triplets(screening), start=1)}


def rater_day(base_url: str, token: str, code: str, number: int, record: Record) -> bool:
    """One rater's whole study; return True when they ended on the completion code."""
    pid = f"{number:04d}{secrets.token_hex(10)}"
    with httpx.Client(base_url=base_url, timeout=60) as call:
        entry = f"/crowd/{token}/"
        step = f"/crowd/{token}/study"
        record.send(
            "entry", call, "GET", entry, params={"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": pid}
        )
        record.send("step", call, "GET", step)
        headers = {"X-CSRFToken": call.cookies.get("csrftoken", "")}
        record.send(
            "consent", call, "POST", f"/crowd/{token}/consent", data={"agree": "yes"}, headers=headers
        )
        for test in ("headphones", "digits"):
            record.send("step", call, "GET", step)
            data = answers_for(pid, token, test)
            record.send("check", call, "POST", f"/crowd/{token}/checks/{test}", data=data, headers=headers)
        while True:
            page = record.send("step", call, "GET", step).text
            if code in page:
                return True
            played = re.search(r'data-played-url="([^"]+)"', page)
            if played is None:
                return False
            audio = re.search(r'id="response-audio"[^>]*src="([^"]+)"', page)
            if audio:
                record.send("audio", call, "GET", html.unescape(audio.group(1)))
            time.sleep(0.8)  # the reply's length: the playback gate refuses a report sooner
            record.send("played", call, "POST", played.group(1), headers=headers)
            submit = played.group(1).removesuffix("played") + "rating"
            public_id = submit.split("/")[-2]
            times = 2 if random.random() < 0.2 else 1
            form = {"score_naturalness": "2"}
            with ThreadPoolExecutor(times) as clicks:
                sent = [
                    clicks.submit(record.send, "submit", call, "POST", submit, data=form, headers=headers)
                    for _ in range(times)
                ]
                answers = [click.result() for click in sent]
            if all(answer.status_code == 302 for answer in answers):
                record.acknowledged.add(public_id)


def integrity(acknowledged: set[str], dimensions: list[str]) -> tuple[int, int]:
    """Return (lost, doubled): acknowledged samples without their scores, and scores beyond one per dimension."""
    from django.db.models import Count

    from evaluation.studies.models import StudyAssignment

    counts = dict(
        StudyAssignment.objects.filter(evaluator__crowd_seat__isnull=False)
        .annotate(n=Count("ratings"))
        .values_list("public_id", "n")
    )
    stored = {str(public_id): n for public_id, n in counts.items()}
    lost = sum(1 for public_id in acknowledged if stored.get(public_id, 0) < len(dimensions))
    doubled = sum(max(n - len(dimensions), 0) for n in counts.values())
    return lost, doubled


def time_analysis() -> tuple[float, float]:
    """Return seconds to screen raters and summarise ANALYSED_RATINGS ACR ratings."""
    from evaluation.studies.results import summarise_ratings
    from evaluation.studies.screening import RatingRow, screen_study_raters

    rng = random.Random(1)
    systems = [f"s{n}" for n in range(6)]
    rows = [
        RatingRow(
            f"r{n % 500}",
            f"{systems[n % 6]}-i{(n // 6) % 400}",
            "rated",
            systems[n % 6],
            f"i{(n // 6) % 400}",
            "naturalness",
            rng.randint(1, 5),
        )
        for n in range(ANALYSED_RATINGS)
    ]
    started = time.perf_counter()
    screen_study_raters(rows, {})
    screened = time.perf_counter()
    summarise_ratings(rows, systems, ["naturalness"])
    return screened - started, time.perf_counter() - screened


def time_comparison_analysis() -> dict[str, float]:
    """Return seconds to analyse ANALYSED_RATINGS comparison answers of each test type (the rows
    and the call of bench/study_analysis.py)."""
    from bench.study_analysis import SYSTEMS, analyse, mushra_scores, pair_votes

    rng = random.Random(1)
    raters = [f"r{n}" for n in range(500)]
    times = [(rng.choice(raters), rng.uniform(5, 60)) for _ in range(ANALYSED_RATINGS)]
    cases: dict[str, dict[str, Any]] = {
        "cmos": {
            "kind": "ccr",
            "votes": pair_votes(ANALYSED_RATINGS, rng, SYSTEMS[0], 3),
            "reference": SYSTEMS[0],
        },
        "ab": {"kind": "ab", "votes": pair_votes(ANALYSED_RATINGS, rng, None, 1), "reference": None},
        "mushra": {"kind": "mushra", "scores": mushra_scores(ANALYSED_RATINGS, rng), "reference": SYSTEMS[0]},
    }
    from scipy import stats  # noqa: F401  loaded once by the web process; not the analysis's time

    seconds = {}
    for name, rows in cases.items():
        started = time.perf_counter()
        analyse(
            rows["kind"],
            SYSTEMS if rows["kind"] != "mushra" else SYSTEMS[:5],
            rows["reference"],
            votes=rows.get("votes", ()),
            scores=rows.get("scores", ()),
            times=times,
            anchors=["low", "mid"],
            seed=1,
        )
        seconds[name] = time.perf_counter() - started
    return seconds


def print_analysis() -> None:
    screening_s, summary_s = time_analysis()
    print(
        f"ACR analysis of {ANALYSED_RATINGS:,} ratings: screening {screening_s:.2f} s, summary with intervals {summary_s:.2f} s"
    )
    for name, seconds in time_comparison_analysis().items():
        print(f"{name.upper()} analysis of {ANALYSED_RATINGS:,} answers: {seconds:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=500)
    parser.add_argument("--threads", type=int, default=64, help="raters working at the same moment")
    parser.add_argument("--analysis-only", action="store_true", help="time only the analyses")
    parser.add_argument(
        "--database", default=BENCH_DATABASE, help="the throwaway database (created, then dropped)"
    )
    args = parser.parse_args()
    if args.analysis_only:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
        import django

        django.setup()
        print_analysis()
        return
    server_url, bench_url = postgres_urls(args.database)
    var_dir = Path(tempfile.mkdtemp(prefix="echostudio-crowd-"))
    env = {
        **os.environ,
        "DATABASE_URL": bench_url,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_DEBUG": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "ECHOSTUDIO_VAR_DIR": str(var_dir),
    }
    env.pop("ECHOSTUDIO_PRODUCTION", None)
    os.environ.update(env)
    with throwaway_database(server_url, args.database):
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
        )
        token, code, dimensions = seed(args.raters)
        logging.getLogger("httpx").setLevel(logging.WARNING)
        with gunicorn(env, var_dir / "gunicorn.log") as base_url:
            record = Record()
            started = time.perf_counter()
            with ThreadPoolExecutor(args.threads) as crowd:
                finished = list(
                    crowd.map(lambda n: rater_day(base_url, token, code, n, record), range(args.raters))
                )
            elapsed = time.perf_counter() - started
        lost, doubled = integrity(record.acknowledged, dimensions)
        from django.db import connections

        connections.close_all()
    requests = sum(sum(counter.values()) for counter in record.statuses.values())
    print(
        f"\n{args.raters} raters ({args.threads} at once): {requests:,} requests in {elapsed:.1f} s; "
        f"{sum(finished)} reached the completion code"
    )
    print(f"\n{'request':10} {'count':>7} {'p50 ms':>8} {'p95 ms':>8}  statuses")
    everything: list[float] = []
    for kind, times in sorted(record.latencies.items()):
        everything += times
        ordered = sorted(times)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(record.statuses[kind].items()))
        print(f"{kind:10} {len(times):>7} {statistics.median(times):>8.1f} {p95:>8.1f}  {statuses}")
    ordered = sorted(everything)
    print(
        f"{'all':10} {len(ordered):>7} {statistics.median(ordered):>8.1f} {ordered[int(0.95 * (len(ordered) - 1))]:>8.1f}"
    )
    print(
        f"\nratings acknowledged: {len(record.acknowledged)}; lost: {lost}; doubled: {doubled} (goal 0 and 0)"
    )
    print_analysis()


if __name__ == "__main__":
    main()
