"""EchoStudio at 10K, 100K and 1M items with 30,000 annotations, served by gunicorn on PostgreSQL (issue 27).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio nice .venv/bin/python bench/scale.py \\
        [--sizes 10K,100K,1M] [--repeats 40]

A throwaway database "<name>_scale" is made next to the one DATABASE_URL names (dropped afterwards)
and served by gunicorn with the project's gunicorn.conf.py (2 workers, DEBUG off). Items arrive
through the import page in uploads of 100,000 rows (the same `import_items` the command line uses),
each size's new items on top of the last; the 30,000 annotations (3 on each of the first 10,000
items, 30 annotators, accepted takes with display contours, gold on every 20th) stay the same.
Each of the nine annotator-facing requests is sent REPEATS times over HTTP, each on a fresh
connection: median and p95 wall time, the CPU of the gunicorn workers and their PostgreSQL
backends per request, and the SQL queries of one such request (sent in-process, the same code
path). Last, each median's and each CPU figure's growth from the second-last size to the last
(the issue asks 100K -> 1M within 1.3x), each request's slowest query at the last size, the
workers' resident memory, and the load average throughout: the machine is shared, so read wall
times at their load and CPU as what a request costs (the load inflates it far less).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import figures, servers

GROWTH_LIMIT = 1.3  # the bound on a median's growth from 100K to 1M items


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10K,100K,1M", type=figures.parse_sizes)
    parser.add_argument("--repeats", type=int, default=40)
    options = parser.parse_args()
    given, _ = servers.postgres_urls("unused")
    database = f"{urlsplit(given).path.lstrip('/')}_scale"
    server_url, bench_url = servers.postgres_urls(database)
    os.environ["DATABASE_URL"] = bench_url
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    with servers.throwaway_database(server_url, database):
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)
        import django

        django.setup()
        run(options.sizes, options.repeats, server_url, database, bench_url)


def run(sizes: list[int], repeats: int, server_url: str, database: str, bench_url: str) -> None:
    from django.db import connection

    from annotation.labelling.models import Annotation
    from annotation.recording.models import Item
    from bench import echostudio_side as side

    people = side.make_people()
    log = Path(f"/tmp/bench-scale-{os.getpid()}.log")
    masters: list[int] = []
    loads = [servers.load_average()]
    results: dict[int, list[figures.Timing]] = {}
    queries: dict[int, dict[str, list[tuple[str, float]]]] = {}
    imports: list[tuple[int, float]] = []
    with servers.gunicorn(side.server_env(bench_url), log, masters) as base:
        served = side.Served(masters[0], server_url, database)
        boot_rss = servers.rss_mib(servers.worker_pids(masters[0]))
        http = {
            "annotator": side.http_client(base, people.annotators[0]),
            "admin": side.http_client(base, people.admin),
        }
        made = 0
        for size in sizes:
            imports.append((size - made, side.import_items(http["admin"], made, size - made)))
            if made == 0:
                side.label_items(people)
            made = size
            connection.cursor().execute("VACUUM ANALYZE")  # a steady-state database: visibility map set
            measured = side.cases(people, repeats + 4)
            results[size] = [
                servers.timed_interleaved([(side.sender(http, case), served.pids)], repeats)[0]
                for case in measured
            ]
            queries[size] = side.queries_of(people, measured)
            loads.append(servers.load_average())
            print(f"measured at {figures.size_label(size)} items; {loads[-1]}", flush=True)
        served_rss = servers.rss_mib(servers.worker_pids(masters[0]))
        names = [case.name for case in measured]
        counts = (Item.objects.count(), Annotation.objects.count())
    report(sizes, names, results, queries, imports, counts, loads, boot_rss, served_rss)


def report(
    sizes: list[int],
    names: list[str],
    results: dict[int, list[figures.Timing]],
    queries: dict[int, dict[str, list[tuple[str, float]]]],
    imports: list[tuple[int, float]],
    counts: tuple[int, int],
    loads: list[str],
    boot_rss: list[float],
    served_rss: list[float],
) -> None:
    labels = [figures.size_label(size) for size in sizes]
    print(
        f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {counts[0]:,} items, {counts[1]:,} annotations"
    )
    print(
        "load average at the start and after each size: " + "; ".join(load.split(" on ")[0] for load in loads)
    )
    print("\nitem import through the page (uploads of 100,000 rows):")
    print(
        figures.table(
            ["to size", "rows", "seconds", "rows/s"],
            [
                [label, rows, seconds, figures.rows_per_second(rows, seconds)]
                for label, (rows, seconds) in zip(labels, imports, strict=True)
            ],
        )
    )
    header = ["request"]
    for label in labels:
        header += [f"{label} median", "p95", "cpu", "q"]
    if len(sizes) > 1:
        header += [f"growth {labels[-2]}->{labels[-1]}", "cpu growth"]
    rows = []
    growths: dict[str, list[float]] = {"median": [], "cpu": []}
    for index, name in enumerate(names):
        row: list[object] = [name]
        for size in sizes:
            timed = results[size][index]
            row += [timed.median_ms, timed.p95_ms, timed.cpu_ms, len(queries[size][name])]
        if len(sizes) > 1:
            last, before = results[sizes[-1]][index], results[sizes[-2]][index]
            growths["median"].append(figures.ratio(last.median_ms, before.median_ms))
            growths["cpu"].append(figures.ratio(last.cpu_ms, before.cpu_ms))
            row += [f"{growths['median'][-1]:.2f}x", f"{growths['cpu'][-1]:.2f}x"]
        rows.append(row)
    print("\n" + figures.table(header, rows))
    print("(ms: wall median and p95 over fresh connections; cpu: CPU ms per request of the gunicorn")
    print(" workers and their PostgreSQL backends together; q: SQL queries of one request)")
    for kind, grown in growths.items():
        if grown:
            held = all(figures.within(growth, GROWTH_LIMIT) for growth in grown)
            print(
                f"every request's {kind} within {GROWTH_LIMIT}x from {labels[-2]} to {labels[-1]}: "
                f"{'yes' if held else 'NO'} (largest {max(grown):.2f}x)"
            )
    steady = all(len({len(queries[size][name]) for size in sizes}) == 1 for name in names)
    print(f"query counts independent of the data size: {'yes' if steady else 'NO'}")
    print(f"\nthe slowest query of each request at {labels[-1]} (in-process, ms):")
    for name in names:
        sql, seconds = max(queries[sizes[-1]][name], key=lambda query: query[1])
        tables = sql[sql.find(" FROM ") + 1 :] if " FROM " in sql else sql
        print(f"  {name}: {seconds * 1000:.0f} ms  {tables[:160]}")
    print(
        f"gunicorn worker RSS: {max(boot_rss):.0f} MiB after start, {max(served_rss):.0f} MiB after serving "
        "all of the above"
    )


if __name__ == "__main__":
    main()
