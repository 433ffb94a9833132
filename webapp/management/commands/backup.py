"""Write one consistent snapshot of the studio, database and media, to a folder or an S3 prefix."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.backup import printed_progress, take_backup
from webapp.lib.snapshots import target_for


class Command(BaseCommand):
    help = (
        "Back up the database (one consistent moment) and every media file, with a checksummed "
        "manifest, to PATH: a new folder or an s3://bucket/prefix (docs/deployment.md, Backups)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="a new or empty folder, or s3://bucket/prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        progress = printed_progress(self.stdout)
        try:
            target = target_for(options["path"])
            report = take_backup(target, progress)
        except (ValueError, FileExistsError, RuntimeError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Backed up {report.tables} tables ({report.rows:,} rows) and {report.media_files:,} media "
                f"files ({report.media_bytes / 1e6:,.1f} MB) to {target.description} in {report.seconds:.1f} s."
            )
        )
