from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from evaluation import tasks  # noqa: F401  (registers the job kinds)
        from evaluation.judging import receivers  # noqa: F401  (drops judgements of changed outputs)

    def seed_demo(self, progress: Callable[[float, str], None]) -> dict[str, Any]:
        """Seed two demo systems with outputs for the recorded demo items (`manage.py seed_demo`)."""
        from evaluation.outputs.demo import seed_demo_outputs

        return {"outputs": seed_demo_outputs()}
