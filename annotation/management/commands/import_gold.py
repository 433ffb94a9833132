"""`manage.py import_gold PATH --as USER`: import gold references (and annotations) from an export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.gold.importing import GoldImportError, import_gold
from webapp.models import User


class Command(BaseCommand):
    help = (
        "Import a gold export (gold.jsonl, a parquet file, or an export folder). Every row is checked "
        "first; with any bad row nothing is imported. Each row adds a gold version to its item."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument(
            "--as",
            dest="username",
            required=True,
            help="the admin recorded as importer (and as the actor of audio that arrives with new items)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        user = User.objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        try:
            summary = import_gold(path, imported_by=user)
        except GoldImportError as error:
            for problem in error.problems[:50]:
                self.stderr.write(str(problem))
            raise CommandError(f"Nothing was imported: {len(error.problems)} problems") from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {summary.rows} rows: {summary.items_created} new items, {summary.takes_created} "
                f"recordings, {summary.gold_created} gold versions, {summary.annotations_imported} annotations "
                f"({summary.annotations_skipped} skipped for unknown annotators"
                + (f": {', '.join(sorted(summary.unknown_annotators))}" if summary.unknown_annotators else "")
                + ")."
            )
        )
