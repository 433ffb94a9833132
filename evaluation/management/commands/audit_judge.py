"""Audit a judge configuration (consistency, bias probes, caps, agreement) and print the figures."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION
from evaluation.results.judge_audit import AuditRefused, audit_page, start_judge_audit
from webapp.jobs import run_job
from webapp.models import Job


class Command(BaseCommand):
    help = (
        "Audit a judge configuration on a benchmark version's outputs. Runs here and prints every "
        "figure (estimate, 95% interval, n); --queue hands it to a worker instead (see the audit page)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("judge", help="Judge configuration name")
        parser.add_argument("--benchmark-version", default=DEFAULT_BENCHMARK_VERSION)
        parser.add_argument("--repeats", type=int, default=3, help="k: times each prompt is judged")
        parser.add_argument("--outputs", type=int, default=30, help="How many outputs to audit")
        parser.add_argument("--compare-with", nargs="*", default=[], help="Other judges' names")
        parser.add_argument("--queue", action="store_true", help="Run as a job on a worker")
        parser.add_argument("--json", action="store_true", help="Print the whole result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        names = [options["judge"], *options["compare_with"]]
        configs = {config.name: config for config in JudgeConfig.objects.filter(name__in=names)}
        missing = [name for name in names if name not in configs]
        if missing:
            raise CommandError(f"No judge configuration named {', '.join(map(repr, missing))}")
        try:
            audit = start_judge_audit(
                configs[options["judge"]],
                options["benchmark_version"],
                repeats=options["repeats"],
                max_outputs=options["outputs"],
                compare_with=[configs[name] for name in options["compare_with"]],
            )
        except AuditRefused as exc:
            raise CommandError(str(exc)) from exc
        assert audit.job is not None
        if options["queue"]:
            self.stdout.write(f"Audit {audit.pk} queued as job {audit.job.pk}.")
            return
        run_job(audit.job.pk)
        job = Job.objects.get(pk=audit.job.pk)
        audit.job = job
        if not isinstance(job.result, dict) or "consistency" not in job.result:
            raise CommandError(f"The audit did not finish: {job.status} {job.error}")
        if options["json"]:
            self.stdout.write(json.dumps(job.result, indent=2))
            return
        for title, chart in audit_page(audit)["charts"]:
            self.stdout.write(title)
            for row in chart["rows"]:
                figure = row["figure"]
                interval = (
                    f"[{figure['low']:.3f}, {figure['high']:.3f}]"
                    if figure["low"] is not None
                    else figure["note"] or "-"
                )
                estimate = "-" if figure["estimate"] is None else f"{figure['estimate']:.3f}"
                self.stdout.write(f"  {row['label']}: {estimate} {interval} n={figure['n']}")
