"""Write a dataset snapshot as records.jsonl (or records.arrow) + WAV files for `python -m ml.cli`
(multi-GPU training)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.recording.models import Split
from ml.core.training_records import RECORD_FORMATS
from ml.jobs.datasets import EmptyDataset, create_snapshot, export_snapshot
from ml.jobs.models import DatasetSnapshot


class Command(BaseCommand):
    help = (
        "Freeze the items ready for training (or export an existing snapshot) into a folder that "
        "python -m ml.cli reads: records.jsonl (or .arrow), audio/*.wav and manifest.json."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path, help="where to write the export (created if missing)")
        parser.add_argument(
            "--purpose", choices=DatasetSnapshot.Purpose.values, default=DatasetSnapshot.Purpose.SFT
        )
        parser.add_argument("--splits", default=Split.TRAIN, help="comma-separated, e.g. train,dev")
        parser.add_argument("--snapshot", type=int, help="export this existing snapshot instead")
        parser.add_argument(
            "--format",
            choices=sorted(RECORD_FORMATS),
            default="jsonl",
            help="records.jsonl (default) or records.arrow (Arrow IPC stream, written in record batches)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["snapshot"] is not None:
            snapshot = DatasetSnapshot.objects.filter(pk=options["snapshot"]).first()
            if snapshot is None:
                raise CommandError(f"no dataset snapshot #{options['snapshot']}")
        else:
            splits = [split.strip() for split in options["splits"].split(",") if split.strip()]
            unknown = sorted(set(splits) - set(Split.values))
            if unknown:
                raise CommandError(f"unknown split(s): {', '.join(unknown)}")
            try:
                snapshot = create_snapshot(options["purpose"], splits)
            except EmptyDataset as exc:
                raise CommandError(str(exc)) from exc
        records_file = export_snapshot(snapshot, options["folder"], records_format=options["format"])
        self.stdout.write(f"snapshot #{snapshot.pk}: {snapshot.size} records written to {records_file}")
