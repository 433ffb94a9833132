"""manage.py import_taxonomy FILE.jsonl: add the builder's topic taxonomy, all of the file or none of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ml.builder.taxonomy_import import TaxonomyRefused, import_taxonomy


class Command(BaseCommand):
    help = (
        "Import a topic taxonomy (JSONL: domain, subcategory, topic[, description, active]) for the builder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            with path.open(encoding="utf-8-sig") as handle:
                result = import_taxonomy(handle)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from exc
        except TaxonomyRefused as exc:
            raise CommandError("nothing was imported:\n" + "\n".join(exc.problems)) from exc
        self.stdout.write(
            f"{result.created} topics created, {result.updated} updated, {result.unchanged} unchanged"
        )
