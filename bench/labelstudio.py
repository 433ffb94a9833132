"""EchoStudio and Label Studio side by side in one run: the same work, interleaved (issue 27).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/echostudio nice .venv/bin/python bench/labelstudio.py \\
        [--items 100K] [--annotations 30K] [--repeats 40]

Label Studio VERSION is installed from PyPI into a scratch virtualenv (bench/labelstudio_side.py,
made once under ~/.cache/echostudio-bench) and run offline. Each app gets its own throwaway
PostgreSQL database beside DATABASE_URL's ("<name>_vs_echostudio", "<name>_vs_labelstudio") and
gunicorn with EchoStudio's gunicorn.conf.py (2 gthread workers of 8 threads), DEBUG off.

The same items go into each through its own import (EchoStudio's import page, Label Studio's
import API, in alternating uploads of 10,000); then 3 annotations on each of the first
annotations/3 items, made through each app's ORM (bench/labelstudio_seed.py for Label Studio).
Each of EchoStudio's nine annotator requests is then timed beside the Label Studio request that
does its work (named in the table), taking turns request by request, every request on a fresh
connection with a signed-in session: wall median and p95, and the CPU per request of each app's
gunicorn workers and PostgreSQL backends. The ratios divide Label Studio's figure by EchoStudio's
from this same run.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import figures, servers
from bench import labelstudio_side as ls

LABEL_STUDIO_READY = "/health"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", default="100K", type=lambda text: figures.parse_sizes(text)[0])
    parser.add_argument("--annotations", default="30K", type=lambda text: figures.parse_sizes(text)[0])
    parser.add_argument("--repeats", type=int, default=40)
    options = parser.parse_args()
    given, _ = servers.postgres_urls("unused")
    name = urlsplit(given).path.lstrip("/")
    server_url, es_url = servers.postgres_urls(f"{name}_vs_echostudio")
    _, ls_url = servers.postgres_urls(f"{name}_vs_labelstudio")
    os.environ["DATABASE_URL"] = es_url
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    install_seconds = ls.ensure_installed()
    print(f"Label Studio {ls.VERSION} virtualenv ready ({install_seconds:.0f} s to install)", flush=True)
    with (
        servers.throwaway_database(server_url, f"{name}_vs_echostudio"),
        servers.throwaway_database(server_url, f"{name}_vs_labelstudio"),
    ):
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)
        ls_env = ls.environment(ls_url)
        try:
            started = time.perf_counter()
            ls.migrate(ls_env)
            print(f"Label Studio migrated in {time.perf_counter() - started:.0f} s", flush=True)
            import django

            django.setup()
            run(options.items, options.annotations, options.repeats, server_url, name, es_url, ls_env)
        finally:
            shutil.rmtree(
                ls_env["BASE_DATA_DIR"], ignore_errors=True
            )  # its media and logs, like its database


def run(
    items: int,
    annotations: int,
    repeats: int,
    server_url: str,
    name: str,
    es_url: str,
    ls_env: dict[str, str],
) -> None:
    from django.db import connection

    from bench import echostudio_side as es
    from bench.request_profile import SCRIPT

    people = es.make_people()
    setup = ls.seed(ls_env, "setup")
    project = int(setup["project"])
    loads = [servers.load_average()]
    log = Path(f"/tmp/bench-labelstudio-{os.getpid()}")
    es_masters: list[int] = []
    ls_masters: list[int] = []
    with (
        servers.gunicorn(es.server_env(es_url), log.with_suffix(".echostudio.log"), es_masters) as es_base,
        servers.gunicorn(
            ls_env,
            log.with_suffix(".labelstudio.log"),
            ls_masters,
            python=str(ls.PYTHON),
            app="core.wsgi:application",
            cwd=ls.package_dir(),
            ready_path=LABEL_STUDIO_READY,
        ) as ls_base,
    ):
        boot_rss = {
            "EchoStudio": servers.rss_mib(servers.worker_pids(es_masters[0])),
            "Label Studio": servers.rss_mib(servers.worker_pids(ls_masters[0])),
        }
        es_http = {
            "annotator": es.http_client(es_base, people.annotators[0]),
            "admin": es.http_client(es_base, people.admin),
        }
        ls_http = {
            who: ls.http_client(ls_base, str(setup["cookie_name"]), str(setup["sessions"][who]))
            for who in ("annotator", "admin")
        }
        import_seconds = {"EchoStudio": 0.0, "Label Studio": 0.0}
        for first in range(0, items, ls.IMPORT_CHUNK):
            count = min(ls.IMPORT_CHUNK, items - first)
            import_seconds["EchoStudio"] += es.import_items(
                es_http["admin"], first, count, chunk=ls.IMPORT_CHUNK
            )
            import_seconds["Label Studio"] += ls.import_tasks(ls_http["admin"], project, first, count, SCRIPT)
        loads.append(servers.load_average())
        print(f"imported {items:,} items into each; {loads[-1]}", flush=True)
        per_task = 3
        es.label_items(people)  # 3 annotations on each of the first 10,000 items
        made = ls.seed(ls_env, "annotate", project, annotations // per_task, per_task)
        connection.cursor().execute("VACUUM ANALYZE")
        vacuum(server_url, f"{name}_vs_labelstudio")
        seeded = ls.Seeded(
            project,
            int(made["annotation"]),
            int(made["labelled_task"]),
            list(made["open_tasks"]),
            list(setup["result"]),
        )
        es_cases = es.cases(people, repeats + 4)
        ls_cases = ls.cases(ls_http, seeded)
        es_served = es.Served(es_masters[0], server_url, f"{name}_vs_echostudio")
        ls_served = es.Served(ls_masters[0], server_url, f"{name}_vs_labelstudio")
        measured = []
        for case in es_cases:
            es_timing, ls_timing = servers.timed_interleaved(
                [
                    (es.sender(es_http, case), es_served.pids),
                    (ls_cases[case.name], ls_served.pids),
                ],
                repeats,
            )
            measured.append((case, es_timing, ls_timing))
            print(f"measured {case.name}", flush=True)
        queries = {name: len(run) for name, run in es.queries_of(people, es_cases).items()}
        loads.append(servers.load_average())
        served_rss = {
            "EchoStudio": servers.rss_mib(servers.worker_pids(es_masters[0])),
            "Label Studio": servers.rss_mib(servers.worker_pids(ls_masters[0])),
        }
        from annotation.labelling.models import Annotation
        from annotation.recording.models import Item

        counts = {
            "EchoStudio": (Item.objects.count(), Annotation.objects.count()),
            "Label Studio": (int(made["tasks"]), int(made["annotations"])),
        }
    report(items, measured, queries, import_seconds, counts, loads, boot_rss, served_rss)


def vacuum(server_url: str, database: str) -> None:
    import psycopg

    url = servers.postgres_urls(database)[1].replace("postgres://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def report(
    items: int,
    measured: list,
    queries: dict[str, int],
    import_seconds: dict[str, float],
    counts: dict[str, tuple[int, int]],
    loads: list[str],
    boot_rss: dict[str, list[float]],
    served_rss: dict[str, list[float]],
) -> None:
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; Label Studio {ls.VERSION} and EchoStudio")
    for app, (made_items, made_annotations) in counts.items():
        print(f"{app}: {made_items:,} items, {made_annotations:,} annotation rows")
    print("load average at the start, after the imports and at the end: " + "; ".join(loads))
    rows = []
    for case, es_timing, ls_timing in measured:
        rows.append(
            [
                case.name,
                es_timing.median_ms,
                es_timing.p95_ms,
                es_timing.cpu_ms,
                queries[case.name],
                ls_timing.median_ms,
                ls_timing.p95_ms,
                ls_timing.cpu_ms,
                f"{figures.ratio(ls_timing.median_ms, es_timing.median_ms):.1f}x",
                f"{figures.ratio(ls_timing.cpu_ms, es_timing.cpu_ms):.1f}x",
                case.label_studio,
            ]
        )
    header = ["request", "ES median", "p95", "cpu", "q", "LS median", "p95", "cpu", "ratio", "cpu ratio"]
    print(f"\nat {figures.size_label(items)} items, ms; ratio = Label Studio / EchoStudio, same run")
    print(figures.table([*header, "Label Studio request"], rows))
    print("(wall median and p95 over fresh connections, taking turns; cpu: CPU ms per request of each app's")
    print(" gunicorn workers and PostgreSQL backends; q: EchoStudio's SQL queries of one request)")
    rates = {app: figures.rows_per_second(items, seconds) for app, seconds in import_seconds.items()}
    print(
        f"\nimport of {items:,} items in uploads of {ls.IMPORT_CHUNK:,}: EchoStudio {rates['EchoStudio']:,.0f} rows/s "
        f"(import page), Label Studio {rates['Label Studio']:,.0f} rows/s (import API): "
        f"{figures.ratio(rates['EchoStudio'], rates['Label Studio']):.1f}x"
    )
    for app in ("EchoStudio", "Label Studio"):
        print(
            f"{app} gunicorn worker RSS: {max(boot_rss[app]):.0f} MiB after start, "
            f"{max(served_rss[app]):.0f} MiB after serving"
        )
    print(
        "worker RSS ratio after serving: "
        f"{figures.ratio(max(served_rss['Label Studio']), max(served_rss['EchoStudio'])):.1f}x"
    )


if __name__ == "__main__":
    main()
