from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _create_role_groups(**_: Any) -> None:
    from webapp.roles import ensure_role_groups

    ensure_role_groups()


class WebappConfig(AppConfig):
    name = "webapp"
    verbose_name = "EchoStudio"

    def ready(self) -> None:
        # Loading the Celery app here (not in webapp/__init__) binds @shared_task to it in every process.
        from webapp import celery  # noqa: F401  (the Celery app, which loads webapp.jobs and its job kinds)

        post_migrate.connect(_create_role_groups, sender=self)
