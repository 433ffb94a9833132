"""`manage.py assign_annotators`: give recorded items their N annotators (per project, default 3)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotation.labelling.assignment import assign_waiting_items


class Command(BaseCommand):
    help = "Assign annotators to every recorded item still short of its project's N, least-loaded first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=None, help="at most this many items")

    def handle(self, *args: Any, **options: Any) -> None:
        results = assign_waiting_items(limit=options["limit"])
        assigned = sum(len(result.assigned) for result in results)
        short = sum(1 for result in results if result.shortfall)
        self.stdout.write(self.style.SUCCESS(f"Assigned {assigned} annotations over {len(results)} items."))
        if short:
            self.stderr.write(f"{short} items still lack annotators: add annotators or lower N.")
