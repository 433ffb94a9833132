"""Who may see or score what on the judging side.

Judge configurations, runs and rubric samples are for admins (`role_required(Role.ADMIN)` on
their views). An evaluator scores by hand only the samples they were invited to, and reaches an
output only by its random public id inside such a sample: any other sample or output does not
exist for them (404, so not even its existence leaks). What their pages show of an output is
blind: see `evaluation.outputs.access`.

A judge was shown the item's gold, so what it wrote (rationale, raw answer, error) and scored can
quote, paraphrase or betray it: every page, API and export reads judgements through
`readable_judgements`, which withholds all of that on the items the viewer is still labelling
(`annotation.gold.access.gold_withheld_items`, the peer-label rule).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation.gold.access import WITHHELD_WHILE_LABELLING
from evaluation.judging.models import JudgeConfig, Judgement, JudgeRun, RubricSample, RubricSampleEntry
from webapp.models import User


def judge_config_for_admin(config_id: int) -> JudgeConfig:
    """Return the judge configuration an admin asked for; 404 when there is none."""
    return get_object_or_404(JudgeConfig, pk=config_id)


def judge_run_for_admin(run_id: int) -> JudgeRun:
    """Return the judge run an admin asked for, with its system, judge and job; 404 when there is none."""
    return get_object_or_404(JudgeRun.objects.select_related("system", "judge_config", "job"), pk=run_id)


def sample_for_admin(sample_id: int) -> RubricSample:
    """Return the rubric sample an admin asked for; 404 when there is none."""
    return get_object_or_404(RubricSample, pk=sample_id)


def sample_for_evaluator(evaluator: User, sample_id: int) -> RubricSample:
    """Return a sample the evaluator was invited to; others' samples do not exist for them."""
    sample = RubricSample.objects.filter(pk=sample_id, evaluators=evaluator).first()
    if sample is None:
        raise Http404("No such sample.")
    return sample


def entry_for_evaluator(sample: RubricSample, public_id: UUID) -> RubricSampleEntry:
    """Return the sample's entry of the output with this public id (call with a sample the evaluator
    may open, from `sample_for_evaluator`); 404 for an output outside the sample."""
    entry = (
        RubricSampleEntry.objects.filter(sample=sample, output__public_id=public_id)
        .select_related("output__item__recording", "output__system")
        .first()
    )
    if entry is None:
        raise Http404("No such output in this sample.")
    return entry


# What of a judgement was written or scored against its item's gold, and what stands in its place.
GOLD_DERIVED: dict[str, Any] = {
    "rationale": "",
    "raw_text": "",
    "error": "",
    "subscores": {},
    "judge_flags": [],
    "auto_flags": [],
    "raw_sum": None,
    "cap": None,
    "cap_reasons": [],
    "score": None,
}


def readable_judgement(judgement: Judgement, withheld_items: frozenset[int]) -> Judgement:
    """Return the judgement as a viewer may read it: on an item in `withheld_items` (the viewer's
    `gold_withheld_items`), a copy with everything in `GOLD_DERIVED` blanked and `withheld` saying
    why (it refuses to be saved); the judgement itself otherwise. Reads `judgement.output`."""
    if judgement.output.item_id not in withheld_items:
        return judgement
    shown = copy.copy(judgement)
    for name, blank in GOLD_DERIVED.items():
        setattr(shown, name, copy.copy(blank))
    shown.withheld = WITHHELD_WHILE_LABELLING
    return shown


def readable_judgements(judgements: Iterable[Judgement], withheld_items: frozenset[int]) -> list[Judgement]:
    """Return each judgement as the viewer may read it (`readable_judgement`)."""
    return [readable_judgement(judgement, withheld_items) for judgement in judgements]
