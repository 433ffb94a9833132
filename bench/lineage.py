"""The consent rule and the lineage manifest at 400,000 takes.

    .venv/bin/python bench/lineage.py [TAKES]        (SQLite by default; DATABASE_URL for PostgreSQL)

Creates a throwaway database (Django's test database), fills it with bulk_create — TAKES takes
(400,000 by default) of 200 actors over 2,000 items, each actor with a consent record, one of them
withdrawn — then prints: how long writing a snapshot's manifest of every take takes
(`record_uses`, in batches) and the peak memory it adds; how long the consent rule takes to count
the takes consented for model training; and how long the withdrawn actor's lineage report takes
(`person_lineage`). The database is dropped at the end.
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django.setup()

from django.db import connection
from django.test.utils import setup_test_environment

from annotation.recording.consent.models import SCOPES, ConsentRecord, ConsentText, TakeUse, record_uses
from annotation.recording.consent.workflows import withdraw_consent
from annotation.recording.models import Item, Take
from ml.jobs.lineage import person_lineage
from ml.jobs.models import DatasetSnapshot
from webapp.models import User

ACTORS, ITEMS = 200, 2000
BATCH = 20_000


def fill(n_takes: int) -> list[User]:
    """Create the actors (each consenting), the items and the takes; return the actors."""
    actors = User.objects.bulk_create(User(username=f"actor{n}") for n in range(ACTORS))
    text = ConsentText.current()
    consents = ConsentRecord.objects.bulk_create(
        ConsentRecord(person=actor, text=text, **dict.fromkeys(SCOPES, True)) for actor in actors
    )
    items = Item.objects.bulk_create(
        Item(external_id=f"EE-{n:05d}", text=f"utterance {n}", scenario="implicit", target_emotion="sad")
        for n in range(ITEMS)
    )
    for start in range(0, n_takes, BATCH):
        Take.objects.bulk_create(
            Take(
                item=items[n % ITEMS],
                actor=actors[n % ACTORS],
                consent=consents[n % ACTORS],
                status=Take.Status.ACCEPTED,
                audio_key=f"takes/{n}.wav",
                original_key=f"takes/{n}.wav",
            )
            for n in range(start, min(start + BATCH, n_takes))
        )
    return actors


def main() -> None:
    n_takes = int(sys.argv[1]) if len(sys.argv) > 1 else 400_000
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        started = time.perf_counter()
        actors = fill(n_takes)
        print(
            f"{n_takes:,} takes of {ACTORS} actors over {ITEMS:,} items on {connection.vendor}: "
            f"filled in {time.perf_counter() - started:.1f} s"
        )

        take_ids = list(Take.objects.values_list("pk", flat=True))
        snapshot = DatasetSnapshot.objects.create(purpose=DatasetSnapshot.Purpose.SFT, content_hash="bench")
        tracemalloc.start()
        started = time.perf_counter()
        written = record_uses(TakeUse.SNAPSHOT, snapshot.pk, take_ids)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"manifest of one snapshot ({written:,} takes): {seconds:.2f} s, "
            f"{written / seconds:,.0f} rows/s, peak {peak / 2**20:.1f} MiB added"
        )

        withdraw_consent(actors[0], by=actors[0])
        started = time.perf_counter()
        consented = Take.objects.consented_for("model_training").count()
        print(
            f"consent rule: {consented:,} of {n_takes:,} takes consented for training, "
            f"counted in {time.perf_counter() - started:.2f} s"
        )

        started = time.perf_counter()
        lineage = person_lineage(actors[0])
        report = lineage.as_dict()
        print(
            f"lineage report of the withdrawn actor ({len(report['takes']):,} takes, "
            f"{len(report['snapshots'])} snapshot): {time.perf_counter() - started:.2f} s"
        )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
