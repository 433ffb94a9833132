"""Judge-human agreement (paper Table 3): Spearman's rho between hand rubric scores and a judge's.

Each coefficient correlates one number per output. Response is the per-output sum of the content
and audio scores (outputs with both, from both sides): pooling content pairs and audio pairs into
one coefficient would correlate two different scales as if they were one. Content and audio each
have their own row by stage, and "All stages" correlates per-output sums over every stage.

Coverage (`webapp.lib.coverage`): each coefficient stands on n outputs scored by both sides, of the
N outputs the evaluators scored for it (every part); the difference is outputs the judge has no
valid score for (not judged, or a judge error).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from django.db.models import Avg

from evaluation.judging.models import HumanJudgement, JudgeConfig, Judgement, RubricSample
from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
)
from webapp.lib.coverage import Coverage
from webapp.lib.ratings import CorrelationCI, spearman_with_bootstrap_ci

PERCEPTION_STAGES = (PERCEPTION, SHIFT_PERCEPTION)

# Table 3's dimensions, each a sum over its parts per output: a part is one stage of several
# alternatives (shift perception stands for perception on emotion-shift items). Response adds
# content and audio; an output counts when the judge and the evaluators scored every part.
AGREEMENT_DIMENSIONS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("Perception", (PERCEPTION_STAGES,)),
    ("Reasoning", ((REASONING,),)),
    ("Response (content + audio)", ((RESPONSE_CONTENT,), (RESPONSE_AUDIO,))),
)
ALL_STAGES_SUM: tuple[tuple[str, ...], ...] = (
    PERCEPTION_STAGES,
    (REASONING,),
    (RESPONSE_CONTENT,),
    (RESPONSE_AUDIO,),
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
    n: int  # outputs scored by the judge and the evaluators
    correlation: CorrelationCI | None
    note: str = ""  # why there is no correlation
    n_expected: int = 0  # N: outputs the evaluators scored for this row

    @property
    def coverage(self) -> Coverage:
        """Return n of N: the outputs behind the coefficient, of those the evaluators scored."""
        return Coverage(self.n, self.n_expected)


@dataclass(frozen=True)
class AgreementTable:
    dimensions: list[AgreementRow]
    all_average: float | None  # Table 3's "All (Avg.)": the mean of the dimensions' rho
    by_stage: list[AgreementRow]
    n_human_scores: int
    all_stages_sum: AgreementRow | None = None  # per-output sums over every stage


def judge_human_agreement(
    judge_config: JudgeConfig, sample: RubricSample | None = None, n_boot: int = 2000
) -> AgreementTable:
    """Return Spearman's rho (bootstrap 95% CI) between human rubric scores (averaged over the
    evaluators of an output's stage) and the judge's valid scores of the same output and stage."""
    human = HumanJudgement.objects.in_use().order_by()
    if sample is not None:
        human = human.filter(output__in=sample.entries.values("output_id"))
    human_means = {
        (output_id, stage): float(mean)
        for output_id, stage, mean in human.values_list("output_id", "stage").annotate(mean=Avg("score"))
    }
    judge_scores = {
        (output_id, stage): float(score or 0.0)  # never None: filtered on score__isnull=False
        for output_id, stage, score in Judgement.objects.in_use()
        .filter(
            judge_config=judge_config,
            score__isnull=False,
            output_id__in={output_id for output_id, _ in human_means},
        )
        .values_list("output_id", "stage", "score")
    }
    by_output: dict[int, dict[str, tuple[float, float]]] = defaultdict(dict)
    scored_by_hand: dict[int, dict[str, tuple[float, float]]] = defaultdict(dict)
    for key, human_score in human_means.items():
        scored_by_hand[key[0]][key[1]] = (human_score, human_score)
        if key in judge_scores:
            by_output[key[0]][key[1]] = (judge_scores[key], human_score)

    def row(label: str, parts: Sequence[Sequence[str]]) -> AgreementRow:
        found = _agreement_row(label, summed_pairs(by_output.values(), parts), n_boot)
        return replace(found, n_expected=len(summed_pairs(scored_by_hand.values(), parts)))

    dimensions = [row(label, parts) for label, parts in AGREEMENT_DIMENSIONS]
    rhos = [dimension.correlation.rho for dimension in dimensions if dimension.correlation is not None]
    return AgreementTable(
        dimensions=dimensions,
        all_average=sum(rhos) / len(rhos) if len(rhos) == len(dimensions) else None,
        by_stage=[row(label, (stages,)) for label, stages in AGREEMENT_STAGES],
        n_human_scores=human.count(),
        all_stages_sum=row("All stages (per-output sum)", ALL_STAGES_SUM),
    )


def summed_pairs(
    outputs: Iterable[Mapping[str, tuple[float, float]]], parts: Sequence[Sequence[str]]
) -> list[tuple[float, float]]:
    """Return one (judge, human) pair per output: each side's sum over ``parts``, where a part is
    the first of its alternative stages the output has; outputs missing a part are left out."""
    pairs: list[tuple[float, float]] = []
    for stages in outputs:
        chosen = [next((stage for stage in part if stage in stages), None) for part in parts]
        if any(stage is None for stage in chosen):
            continue
        scored = [stages[stage] for stage in chosen if stage is not None]
        pairs.append((math.fsum(j for j, _ in scored), math.fsum(h for _, h in scored)))
    return pairs


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
