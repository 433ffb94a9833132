"""`manage.py export_gold FOLDER`: write gold references with items and audio as JSONL and parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotation.gold.export import export_gold
from annotation.gold.harness_export import HF_FOLDER, VOICEBENCH_FOLDER, save_hf_disk, write_voicebench
from annotation.gold.transfer.jobs import record_direct_export
from annotation.recording.models import Scenario, Split


class Command(BaseCommand):
    help = (
        "Export every item with a current gold reference, its audio and its submitted annotations: "
        "gold.jsonl with audio/ files, and a Hugging Face datasets folder (data/*.parquet, README.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path, help="where to write (created if missing)")
        parser.add_argument(
            "--format",
            choices=["jsonl", "parquet", "both", "all"],
            default="both",
            help="all: also hf/ (datasets.load_from_disk) and voicebench/echoeval.jsonl (a harness runs it)",
        )
        parser.add_argument("--scenario", choices=Scenario.values, help="only this scenario")
        parser.add_argument("--split", choices=Split.values, help="only this split")

    def handle(self, *args: Any, **options: Any) -> None:
        chosen = options["format"]
        summary = export_gold(
            options["folder"],
            jsonl=chosen in ("jsonl", "both", "all"),
            parquet=chosen in ("parquet", "both", "all"),
            scenario=options["scenario"],
            split=options["split"],
        )
        record_direct_export(
            by=None,
            via=f"manage.py export_gold --format {chosen}",
            take_ids=summary.take_ids,
            rows=summary.rows,
            parameters={"scenario": options["scenario"] or "", "split": options["split"] or ""},
        )
        written = [str(path) for path in [summary.jsonl_path, *summary.parquet_paths] if path is not None]
        if chosen == "all":
            folder: Path = options["folder"]
            save_hf_disk(folder, folder / HF_FOLDER)
            write_voicebench(folder / VOICEBENCH_FOLDER, scenario=options["scenario"], split=options["split"])
            written += [str(folder / HF_FOLDER), str(folder / VOICEBENCH_FOLDER)]
        self.stdout.write(
            self.style.SUCCESS(f"Exported {summary.rows} gold references: {', '.join(written)}")
        )
