"""Record a checkpoint trained outside the app (e.g. with torchrun) so jobs can use it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ml.jobs.checkpoint_registry import register_checkpoint
from ml.jobs.models import Checkpoint


class Command(BaseCommand):
    help = (
        "Verify a checkpoint directory or s3:// prefix against its metadata.json and record it; "
        "with --kind base, a raw base model folder (config.json and weights) is accepted too."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("uri", help="checkpoint directory or s3://bucket/prefix")
        parser.add_argument("--kind", choices=Checkpoint.Kind.values, required=True)
        parser.add_argument("--name", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        if Checkpoint.objects.filter(name=options["name"]).exists():
            raise CommandError(f"a checkpoint is already named {options['name']!r}")
        try:
            checkpoint = register_checkpoint(options["uri"], options["kind"], options["name"])
        except (OSError, ValueError) as exc:
            what = "base model" if options["kind"] == Checkpoint.Kind.BASE else "checkpoint"
            raise CommandError(f"{options['uri']} is not a complete {what}: {exc}") from exc
        self.stdout.write(f"checkpoint {checkpoint.name} (#{checkpoint.pk}) recorded at {checkpoint.uri}")
