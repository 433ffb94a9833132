"""Print the leaderboard (Table 2) as CSV or LaTeX."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION
from evaluation.results.leaderboard import to_csv, to_latex
from evaluation.results.reports import leaderboard


class Command(BaseCommand):
    help = "Print the leaderboard of a benchmark version as judged by one judge configuration."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("judge", help="Judge configuration name")
        parser.add_argument(
            "--benchmark-version", default=DEFAULT_BENCHMARK_VERSION, help="Benchmark version"
        )
        parser.add_argument("--format", choices=("csv", "latex"), default="csv")

    def handle(self, *args: Any, **options: Any) -> None:
        judge = JudgeConfig.objects.filter(name=options["judge"]).first()
        if judge is None:
            raise CommandError(f"No judge configuration named {options['judge']!r}")
        table = leaderboard(options["benchmark_version"], judge).table
        self.stdout.write(to_csv(table) if options["format"] == "csv" else to_latex(table), ending="")
