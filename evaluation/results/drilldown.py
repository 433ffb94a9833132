"""Item drill-downs: every system's output of an item with every judge's verdicts, beside its gold."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from annotation.gold.models import GoldReference
from annotation.recording.models import Item
from evaluation.judging.access import readable_judgement
from evaluation.judging.models import JudgeConfig, Judgement
from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
)
from evaluation.outputs.models import ModelOutput
from evaluation.results.reports import SINGLE, in_item_set


@dataclass(frozen=True)
class OutputJudgements:
    output: ModelOutput
    by_stage: list[tuple[str, list[Judgement]]]  # stage label, judgements of every judge


def item_drilldown(
    item: Item, benchmark_version: str, withheld_items: frozenset[int]
) -> tuple[GoldReference | None, list[OutputJudgements]]:
    """Return the item's current gold reference and every system's output with all judges' verdicts,
    each as the viewer may read it (`withheld_items`: their `gold_withheld_items`; see
    `evaluation.judging.access.readable_judgement`)."""
    gold = GoldReference.objects.current_of(item)
    outputs = (
        ModelOutput.objects.for_version(benchmark_version)
        .filter(item=item)
        .select_related("system", "item")
        .order_by("system__name")
    )
    judgements: dict[int, list[Judgement]] = defaultdict(list)
    for judgement in (
        Judgement.objects.filter(output__in=outputs)
        .select_related("judge_config", "output")
        .order_by("judge_config__name")
    ):
        judgements[judgement.output_id].append(readable_judgement(judgement, withheld_items))
    labels = dict(Judgement._meta.get_field("stage").choices or [])
    result = []
    for output in outputs:
        stages: dict[str, list[Judgement]] = defaultdict(list)
        for judgement in judgements[output.pk]:
            stages[judgement.stage].append(judgement)
        order = [PERCEPTION, SHIFT_PERCEPTION, REASONING, RESPONSE_CONTENT, RESPONSE_AUDIO]
        result.append(
            OutputJudgements(
                output, [(str(labels[stage]), stages[stage]) for stage in order if stage in stages]
            )
        )
    return gold, result


def items_with_outputs(
    benchmark_version: str, judge_config: JudgeConfig | None, item_set: str = SINGLE
) -> QuerySet[Item]:
    """Return the items of a set that have outputs for a version, with output and judge-error counts."""
    error_filter = Q(model_outputs__benchmark_version=benchmark_version) & ~Q(
        model_outputs__judgements__error_kind=""
    )
    if judge_config is not None:
        error_filter &= Q(model_outputs__judgements__judge_config=judge_config)
    return (
        Item.objects.filter(in_item_set(item_set, ""), model_outputs__benchmark_version=benchmark_version)
        .annotate(
            n_outputs=Count(
                "model_outputs", filter=Q(model_outputs__benchmark_version=benchmark_version), distinct=True
            ),
            n_errors=Count("model_outputs__judgements", filter=error_filter, distinct=True),
        )
        .order_by("external_id")
    )
