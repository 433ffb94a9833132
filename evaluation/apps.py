from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from evaluation import tasks  # noqa: F401  (registers the job kinds)
