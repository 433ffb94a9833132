from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _seed_empty_taxonomy(**_: Any) -> None:
    from annotation.labelling.taxonomy import seed_default_taxonomy_if_empty

    seed_default_taxonomy_if_empty()


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Recording and annotation"

    def ready(self) -> None:
        from annotation import tasks  # noqa: F401  (registers the job kinds)

        # Migration 0006 seeds the taxonomy once; a database flushed later (tests, `manage.py flush`)
        # gets it back here, because flush ends with post_migrate.
        post_migrate.connect(_seed_empty_taxonomy, sender=self)
