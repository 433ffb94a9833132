"""`manage.py import_items FILE`: create or update EchoEval items from a CSV or JSONL file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.recording.items import import_items

ERRORS_PRINTED = 50


class Command(BaseCommand):
    help = (
        "Import items from CSV (header row) or JSONL. Every row is checked first; with any bad row "
        "nothing is imported unless --import-valid-rows is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="a .csv or .jsonl file in UTF-8")
        parser.add_argument(
            "--import-valid-rows", action="store_true", help="import the valid rows even if others are bad"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path} is not a file")
        started = time.perf_counter()
        with path.open("rb") as handle:  # streamed: any size, flat memory
            report = import_items(handle, path.name, import_valid_rows=options["import_valid_rows"])
        seconds = time.perf_counter() - started
        for error in report.errors[:ERRORS_PRINTED]:
            self.stderr.write(str(error))
        if len(report.errors) > ERRORS_PRINTED:
            self.stderr.write(f"… and {len(report.errors) - ERRORS_PRINTED} more problems")
        if not report.imported:
            raise CommandError(
                f"Nothing was imported: {report.invalid_rows} of {report.rows_read} rows have problems "
                "(use --import-valid-rows to import the others)."
                if report.invalid_rows
                else "Nothing was imported."
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"{report.created} created, {report.updated} updated, {report.unchanged} unchanged, "
                f"{report.invalid_rows} rows left out; {report.rows_read} rows in {seconds:.2f} s"
            )
        )
