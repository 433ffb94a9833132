"""Rebuild an empty studio from a snapshot `manage.py backup` wrote, after checking all of it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.backup import RestoreRefused, printed_progress, restore_snapshot
from webapp.lib.snapshots import BadSnapshot, target_for


class Command(BaseCommand):
    help = (
        "Restore the database and media from a snapshot folder or s3://bucket/prefix into an empty "
        "studio. Every checksum is verified before anything is written (docs/deployment.md, Backups)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the snapshot's folder, or s3://bucket/prefix")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="overwrite a studio that is not empty (its database is replaced by the snapshot's)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        progress = printed_progress(self.stdout)
        try:
            target = target_for(options["path"])
            report = restore_snapshot(target, progress, replace=options["replace"])
        except BadSnapshot as exc:
            raise CommandError(f"Refused: the snapshot is not whole, nothing was written. {exc}") from None
        except (RestoreRefused, ValueError) as exc:
            raise CommandError(f"Refused, nothing was written: {exc}") from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Restored {report.tables} tables ({report.rows:,} rows) and {report.media_files:,} media "
                f"files ({report.media_bytes / 1e6:,.1f} MB) from {target.description} in {report.seconds:.1f} s."
            )
        )
