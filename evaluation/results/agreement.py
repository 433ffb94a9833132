"""Judge-human agreement (paper Table 3): Spearman's rho between hand rubric scores and a judge's."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Avg

from evaluation.judging.models import HumanJudgement, JudgeConfig, Judgement, RubricSample
from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
)
from webapp.lib.ratings import CorrelationCI, spearman_with_bootstrap_ci

PERCEPTION_STAGES = (PERCEPTION, SHIFT_PERCEPTION)

# Table 3's dimensions: shift perception counts as perception; content and audio are both response.
AGREEMENT_DIMENSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Perception", PERCEPTION_STAGES),
    ("Reasoning", (REASONING,)),
    ("Response", (RESPONSE_CONTENT, RESPONSE_AUDIO)),
)
AGREEMENT_STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Perception", (PERCEPTION,)),
    ("Shift perception", (SHIFT_PERCEPTION,)),
    ("Reasoning", (REASONING,)),
    ("Response content", (RESPONSE_CONTENT,)),
    ("Response audio", (RESPONSE_AUDIO,)),
)


@dataclass(frozen=True)
class AgreementRow:
    label: str
    n: int
    correlation: CorrelationCI | None
    note: str = ""  # why there is no correlation


@dataclass(frozen=True)
class AgreementTable:
    dimensions: list[AgreementRow]
    all_average: float | None  # Table 3's "All (Avg.)": the mean of the dimensions' rho
    by_stage: list[AgreementRow]
    n_human_scores: int


def judge_human_agreement(
    judge_config: JudgeConfig, sample: RubricSample | None = None, n_boot: int = 2000
) -> AgreementTable:
    """Return Spearman's rho (bootstrap 95% CI) between human rubric scores (averaged over the
    evaluators of an output's stage) and the judge's valid scores of the same output and stage."""
    human = HumanJudgement.objects.order_by()
    if sample is not None:
        human = human.filter(output__in=sample.entries.values("output_id"))
    human_means = {
        (output_id, stage): float(mean)
        for output_id, stage, mean in human.values_list("output_id", "stage").annotate(mean=Avg("score"))
    }
    judge_scores = {
        (output_id, stage): float(score or 0.0)  # never None: filtered on score__isnull=False
        for output_id, stage, score in Judgement.objects.filter(
            judge_config=judge_config,
            score__isnull=False,
            output_id__in={output_id for output_id, _ in human_means},
        ).values_list("output_id", "stage", "score")
    }
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key, human_score in human_means.items():
        if key in judge_scores:
            pairs[key[1]].append((judge_scores[key], human_score))

    def row(label: str, stages: Sequence[str]) -> AgreementRow:
        joined = [pair for stage in stages for pair in pairs[stage]]
        return _agreement_row(label, joined, n_boot)

    dimensions = [row(label, stages) for label, stages in AGREEMENT_DIMENSIONS]
    rhos = [dimension.correlation.rho for dimension in dimensions if dimension.correlation is not None]
    return AgreementTable(
        dimensions=dimensions,
        all_average=sum(rhos) / len(rhos) if len(rhos) == len(dimensions) else None,
        by_stage=[row(label, stages) for label, stages in AGREEMENT_STAGES],
        n_human_scores=human.count(),
    )


def _agreement_row(label: str, pairs: Sequence[tuple[float, float]], n_boot: int) -> AgreementRow:
    if len(pairs) < 3:
        return AgreementRow(label, len(pairs), None, "needs at least 3 outputs scored by both")
    judge, human = [pair[0] for pair in pairs], [pair[1] for pair in pairs]
    if len(set(judge)) < 2 or len(set(human)) < 2:
        return AgreementRow(label, len(pairs), None, "one side gave every output the same score")
    try:
        correlation = spearman_with_bootstrap_ci(judge, human, n_boot=n_boot)
    except ValueError as exc:
        return AgreementRow(label, len(pairs), None, str(exc))
    if math.isnan(correlation.rho):
        return AgreementRow(label, len(pairs), None, "undefined")
    return AgreementRow(label, len(pairs), correlation)
