"""`manage.py export_echomind FOLDER`: each EchoMind set as a Hugging Face dataset folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from evaluation.echomind.hf_export import export_echomind_sets, write_echomind_voicebench


class Command(BaseCommand):
    help = (
        "Write each EchoMind set (script type) as echomind-<type>/: a datasets.load_from_disk folder, "
        "the same rows as parquet, and a dataset card; and voicebench/echomind-<type>.jsonl with its audio, "
        "a VoiceBench-style file a harness runs directly."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path, help="where to write (created if missing)")

    def handle(self, *args: Any, **options: Any) -> None:
        written = export_echomind_sets(options["folder"])
        rows = write_echomind_voicebench(options["folder"] / "voicebench")
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported {len(written)} EchoMind set(s): {', '.join(map(str, written))}; "
                f"VoiceBench-style rows: {sum(rows.values())}"
            )
        )
