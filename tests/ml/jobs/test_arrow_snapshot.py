"""A dataset snapshot exports as Arrow (``export_training_data --format arrow``, issue 46) with the
records its JSONL export holds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.core.management import call_command

from ml.core.training_records import read_records
from ml.jobs.models import DatasetSnapshot
from tests.ml.jobs.support import TrainingItemFactory
from webapp.models import User


def test_a_snapshot_exports_as_arrow_with_the_same_records(
    db: None, ml_storage: Path, make_user: Callable[..., User], tmp_path: Path
) -> None:
    actor = make_user(None, "actor-arrow")
    TrainingItemFactory.create(external_id="TR-0", recording__actor=actor)
    TrainingItemFactory.create(external_id="TR-1", recording__actor=actor, pitch_hz=220.0)
    call_command("export_training_data", str(tmp_path / "jsonl"), "--splits", "train")
    snapshot = DatasetSnapshot.objects.get()

    call_command(
        "export_training_data", str(tmp_path / "arrow"), "--snapshot", str(snapshot.pk), "--format", "arrow"
    )

    from_arrow = read_records(tmp_path / "arrow" / "records.arrow")
    assert [row.record for row in from_arrow] == [
        row.record for row in read_records(tmp_path / "jsonl" / "records.jsonl")
    ]
    assert sorted(row.record.item_id for row in from_arrow) == ["TR-0", "TR-1"]
