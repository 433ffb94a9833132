"""`manage.py export_gold FOLDER`: write gold references with items and audio as JSONL and parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotation.gold.export import export_gold
from annotation.recording.models import Scenario, Split


class Command(BaseCommand):
    help = (
        "Export every item with a current gold reference, its audio and its submitted annotations: "
        "gold.jsonl with audio/ files, and a Hugging Face datasets folder (data/*.parquet, README.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path, help="where to write (created if missing)")
        parser.add_argument("--format", choices=["jsonl", "parquet", "both"], default="both")
        parser.add_argument("--scenario", choices=Scenario.values, help="only this scenario")
        parser.add_argument("--split", choices=Split.values, help="only this split")

    def handle(self, *args: Any, **options: Any) -> None:
        chosen = options["format"]
        summary = export_gold(
            options["folder"],
            jsonl=chosen in ("jsonl", "both"),
            parquet=chosen in ("parquet", "both"),
            scenario=options["scenario"],
            split=options["split"],
        )
        written = [str(path) for path in [summary.jsonl_path, *summary.parquet_paths] if path is not None]
        self.stdout.write(
            self.style.SUCCESS(f"Exported {summary.rows} gold references: {', '.join(written)}")
        )
