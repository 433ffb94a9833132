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
        """Seed two demo systems with spoken outputs for the recorded test items, and the offline
        heuristic judge the leaderboard can use without any endpoint (`manage.py seed_demo`)."""
        from evaluation.echomind.demo import seed_echomind_demo
        from evaluation.judging.heuristic import DEMO_JUDGE_NAME
        from evaluation.judging.models import JudgeConfig
        from evaluation.outputs.demo import seed_demo_outputs

        outputs = seed_demo_outputs()
        progress(1.0, "demo systems have spoken replies")
        JudgeConfig.objects.update_or_create(
            name=DEMO_JUDGE_NAME, defaults={"offline_heuristic": True, "attach_audio": False}
        )
        return {"outputs": outputs, "echomind_cases": seed_echomind_demo()}
