"""`manage.py import_dialogues FILE`: create or replace dialogues from JSONL (one dialogue per line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.dialogues.transfer import import_dialogues

ERRORS_PRINTED = 50


class Command(BaseCommand):
    help = "Import dialogues from JSONL. Every line is checked first; with any problem nothing is imported."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="a .jsonl file in UTF-8, one dialogue per line")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path} is not a file")
        with path.open("rb") as handle:
            report = import_dialogues(handle)
        for error in report.errors[:ERRORS_PRINTED]:
            self.stderr.write(str(error))
        if len(report.errors) > ERRORS_PRINTED:
            self.stderr.write(f"… and {len(report.errors) - ERRORS_PRINTED} more problems")
        if not report.imported:
            raise CommandError("Nothing was imported.")
        self.stdout.write(
            self.style.SUCCESS(
                f"{report.created} created, {report.replaced} replaced, {report.unchanged} unchanged "
                f"({report.lines_read} dialogues read)"
            )
        )
