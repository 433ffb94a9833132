from __future__ import annotations

from django.apps import AppConfig


class MlConfig(AppConfig):
    name = "ml"
    verbose_name = "EchoChat training and inference"

    def ready(self) -> None:
        from ml.builder import export, runner  # noqa: F401  (registers the builder's job kinds)
        from ml.jobs import tasks  # noqa: F401  (registers the job kinds)
