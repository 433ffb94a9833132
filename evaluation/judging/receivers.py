"""What judging does when the outputs below it change (connected in `EvaluationConfig.ready`)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from operator import or_
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.dispatch import receiver

from annotation.recording.models import Item
from evaluation.judging.models import HumanJudgement, Judgement
from evaluation.outputs.models import ModelOutput
from evaluation.outputs.signals import outputs_changed
from webapp.archive import archive_rows
from webapp.db import refresh_planner_statistics

REPLACED = "It scored an output whose content a re-import replaced"
HISTORY_CHANGED = "An earlier turn's reply, the history it was scored with, changed"


@receiver(outputs_changed, dispatch_uid="judging.drop_stale_judgements")
def drop_stale_judgements(
    sender: type[ModelOutput],
    outputs: list[ModelOutput],
    answered_differently: Sequence[tuple[int, str, int]] = (),
    **kwargs: Any,
) -> None:
    """Archive the judges' and evaluators' scores of outputs whose content was replaced: they scored
    other text. Runs inside the import's transaction, so the two commit or fail together."""
    archive_rows(Judgement.objects.filter(output__in=outputs), actor=None, reason=REPLACED)
    archive_rows(HumanJudgement.objects.filter(output__in=outputs), actor=None, reason=REPLACED)
    # A changed, new or removed reply is history for the same system's later turns of its dialogue:
    # their judges and evaluators read another reply, so their scores go too and the next run
    # judges them afresh.
    turns = set(
        ModelOutput.objects.filter(
            pk__in=[output.pk for output in outputs], item__dialogue__isnull=False
        ).values_list("system_id", "benchmark_version", "item__dialogue_id", "item__turn")
    )
    items = {item_id: (system_id, version) for system_id, version, item_id in answered_differently}
    for item_id, dialogue_id, turn in Item.objects.filter(
        pk__in=list(items), dialogue__isnull=False
    ).values_list("pk", "dialogue_id", "turn"):
        turns.add((*items[item_id], dialogue_id, turn))
    later_turns = [
        Q(
            output__system_id=system_id,
            output__benchmark_version=version,
            output__item__dialogue_id=dialogue_id,
            output__item__turn__gt=turn,
        )
        for system_id, version, dialogue_id, turn in turns
    ]
    if later_turns:
        archive_rows(Judgement.objects.filter(reduce(or_, later_turns)), actor=None, reason=HISTORY_CHANGED)
        archive_rows(
            HumanJudgement.objects.filter(reduce(or_, later_turns)), actor=None, reason=HISTORY_CHANGED
        )
    transaction.on_commit(lambda: refresh_planner_statistics(Judgement))
