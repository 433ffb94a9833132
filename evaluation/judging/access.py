"""Who may see or score what on the judging side.

Judge configurations, runs and rubric samples are for admins (`role_required(Role.ADMIN)` on
their views). An evaluator scores by hand only the samples they were invited to, and reaches an
output only by its random public id inside such a sample: any other sample or output does not
exist for them (404, so not even its existence leaks). What their pages show of an output is
blind: see `evaluation.outputs.access`.
"""

from __future__ import annotations

from uuid import UUID

from django.http import Http404
from django.shortcuts import get_object_or_404

from evaluation.judging.models import JudgeConfig, JudgeRun, RubricSample, RubricSampleEntry
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
