from __future__ import annotations

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Recording and annotation"

    def ready(self) -> None:
        from annotation import tasks  # noqa: F401  (registers the job kinds)
