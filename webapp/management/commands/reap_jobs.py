"""Fail or re-queue jobs whose worker died (also done by Celery beat and by workers as they start)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from webapp.jobs import reap_stale_jobs


class Command(BaseCommand):
    help = "Detect jobs left 'running' by a dead worker and re-queue or fail them."

    def handle(self, *args: Any, **options: Any) -> None:
        reaped = reap_stale_jobs()
        self.stdout.write(f"Reaped {len(reaped)} stale job(s): {reaped}")
