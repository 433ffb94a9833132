"""Leaderboard page time with 1,000 items x 13 systems judged on every stage, in PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/eval .venv/bin/python bench/leaderboard.py

Creates a throwaway database (Django's test database, test_<name>), fills it with bulk_create —
1,000 items in the scenario mix of the paper's Table 10, 13 systems (two of them text-only, as in
Table 2), every applicable stage judged by the measured judge (~50,000 judgements, 4% judge
errors) plus a second judge on four systems so the table holds ~65,000 — refreshes the planner
statistics as a judge run does at its end, then requests the
leaderboard, error-propagation and CSV pages through Django's test client and prints the server
time (median of 5 after a warm-up) and the number of queries of each. The database is dropped
at the end.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django.setup()

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, setup_test_environment
from django.urls import reverse

from annotation.recording.models import Item
from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.rubrics import stage_max
from evaluation.judging.stages import applicable_stages
from evaluation.outputs.models import ModelOutput, System
from webapp.db import refresh_planner_statistics
from webapp.models import User
from webapp.roles import Role, grant_role

N_ITEMS = 1000
SCENARIO_SHARES = (
    ("implicit", 220),
    ("audio-dominant", 220),
    ("modality-conflict", 220),
    ("high-arousal", 220),
    ("emotion-shift", 120),
)
SYSTEMS = (
    ("GLM-4-Voice", "general", False),
    ("Step-Audio2 mini", "general", False),
    ("Kimi-Audio", "general", False),
    ("Mimo-Audio-7B-Instruct", "general", False),
    ("Covo-Audio", "general", False),
    ("Fun-Audio-Chat", "general", False),
    ("OpenS2S", "empathy", False),
    ("MERaLiON", "empathy", True),
    ("BLSP-Emo", "empathy", True),
    ("MiniCPM-O", "omni", False),
    ("Qwen2.5-Omni", "omni", False),
    ("Qwen3-Omni", "omni", False),
    ("EchoChat", "ours", False),
)
ERROR_RATE = 0.04
REPEATS = 5


def fill() -> tuple[JudgeConfig, int]:
    """Create items, systems, outputs and judgements; return the measured judge and the row count."""
    rng = random.Random(0)
    scenarios = [scenario for scenario, count in SCENARIO_SHARES for _ in range(count)]
    items = Item.objects.bulk_create(
        Item(external_id=f"EE-{n:04d}", text=f"utterance {n}", scenario=scenario, target_emotion="sad")
        for n, scenario in enumerate(scenarios[:N_ITEMS])
    )
    systems = System.objects.bulk_create(
        System(name=name, category=category, text_only=text_only, anonymous_code=f"SYS-B{n:03d}")
        for n, (name, category, text_only) in enumerate(SYSTEMS)
    )
    outputs = ModelOutput.objects.bulk_create(
        (ModelOutput(system=system, item=item, response_text="…") for system in systems for item in items),
        batch_size=5000,
    )
    judge = JudgeConfig.objects.create(
        name="measured judge", base_url="http://127.0.0.1:9/v1", attach_audio=True
    )
    second = JudgeConfig.objects.create(
        name="second judge", base_url="http://127.0.0.1:9/v1", attach_audio=True
    )
    item_by_id = {item.pk: item for item in items}
    system_by_id = {system.pk: system for system in systems}
    judgements = []
    for output in outputs:
        system = system_by_id[output.system_id]
        skill = 0.3 + 0.05 * systems.index(system)
        for config in (judge, second) if systems.index(system) < 4 else (judge,):
            for stage in applicable_stages(item_by_id[output.item_id].scenario, system.text_only):
                top = stage_max(stage)
                low = 1 if top == 5 else 0
                error = rng.random() < ERROR_RATE
                score = None if error else float(min(top, max(low, round(rng.gauss(skill * top, 2)))))
                judgements.append(
                    Judgement(
                        output=output,
                        stage=stage,
                        judge_config=config,
                        judge_model="bench",
                        prompt_version="v1",
                        prompt_key=f"{output.pk}-{stage}-{config.pk}",
                        score=score,
                        raw_sum=score,
                        error_kind="invalid_json" if error else "",
                    )
                )
    Judgement.objects.bulk_create(judgements, batch_size=5000)
    return judge, len(judgements)


def measure(client: Client, url: str) -> tuple[float, int]:
    """Return the median server time in ms over REPEATS requests (after one warm-up) and the queries."""
    assert client.get(url).status_code == 200
    times = []
    queries = 0
    for _ in range(REPEATS):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
        queries = len(captured)
    return statistics.median(times), queries


def main() -> None:
    if connection.vendor != "postgresql":
        sys.exit("Set DATABASE_URL to a PostgreSQL server: this benchmark measures PostgreSQL.")
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        started = time.perf_counter()
        judge, n_rows = fill()
        # bulk_create bypasses the judge run and the import, which refresh the statistics at their end.
        refresh_planner_statistics(ModelOutput, Judgement)
        print(
            f"filled {N_ITEMS} items x {len(SYSTEMS)} systems: {n_rows} judgements in {time.perf_counter() - started:.1f} s"
        )
        measured = Judgement.objects.filter(judge_config=judge).count()
        print(
            f"measured judge: {measured} judgements ({Judgement.objects.filter(judge_config=judge, score__isnull=True).count()} errors)"
        )
        admin = User.objects.create_user("bench-admin", password="unused-password-123")
        grant_role(admin, Role.ADMIN)
        client = Client()
        client.force_login(admin)
        query = f"?version=echoeval-v1&judge={judge.pk}"
        for label, url in (
            ("leaderboard page", reverse("evaluation:leaderboard")),
            ("error propagation page", reverse("evaluation:error_propagation")),
            ("leaderboard CSV", reverse("evaluation:leaderboard_csv")),
        ):
            median_ms, queries = measure(client, url + query)
            print(f"{label}: {median_ms:.0f} ms server time (median of {REPEATS}), {queries} queries")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
