"""What judging does when the outputs below it change (connected in `EvaluationConfig.ready`)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.dispatch import receiver

from evaluation.judging.models import HumanJudgement, Judgement
from evaluation.outputs.models import ModelOutput
from evaluation.outputs.signals import outputs_changed
from webapp.db import refresh_planner_statistics


@receiver(outputs_changed, dispatch_uid="judging.drop_stale_judgements")
def drop_stale_judgements(sender: type[ModelOutput], outputs: list[ModelOutput], **kwargs: Any) -> None:
    """Delete the judges' and evaluators' scores of outputs whose content was replaced: they scored
    other text. Runs inside the import's transaction, so the two commit or fail together."""
    Judgement.objects.filter(output__in=outputs).delete()
    HumanJudgement.objects.filter(output__in=outputs).delete()
    transaction.on_commit(lambda: refresh_planner_statistics(Judgement))
