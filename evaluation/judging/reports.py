"""Read-only aggregations of the judging pages, each a fixed number of queries however much data."""

from __future__ import annotations

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from evaluation.judging.models import HumanJudgement, JudgeConfig, RubricSample, RubricSampleEntry
from webapp.models import User


def judge_config_rows() -> QuerySet[JudgeConfig]:
    """Return every judge configuration, by name, with its number of judgements and of judge errors."""
    # order_by again: Django leaves Meta.ordering out of aggregating queries.
    return JudgeConfig.objects.annotate(
        n_judgements=Count("judgements"),
        n_errors=Count("judgements", filter=~Q(judgements__error_kind="")),
        has_members=Exists(JudgeConfig.members.through.objects.filter(from_judgeconfig=OuterRef("pk"))),
    ).order_by("name")


def rubric_sample_rows() -> QuerySet[RubricSample]:
    """Return every rubric sample with its number of outputs (`n_entries`) and evaluators (`n_evaluators`)."""
    # order_by again (newest first): Django leaves Meta.ordering out of aggregating queries.
    return RubricSample.objects.annotate(
        n_entries=Count("entries", distinct=True), n_evaluators=Count("evaluators", distinct=True)
    ).order_by("-created_at")


def rubric_sample_progress(sample: RubricSample) -> list[tuple[User, int]]:
    """Return each invited evaluator (by username) with how many of the sample's outputs they scored."""
    scored = dict(
        HumanJudgement.objects.in_use()
        .filter(output_id__in=sample.entries.values("output_id"))
        .order_by()
        .values("evaluator_id")
        .annotate(n=Count("output_id", distinct=True))
        .values_list("evaluator_id", "n")
    )
    return [(evaluator, scored.get(evaluator.pk, 0)) for evaluator in sample.evaluators.order_by("username")]


def evaluator_samples(evaluator: User) -> list[tuple[RubricSample, int]]:
    """Return the samples the evaluator was invited to (with `n_entries`) and how many outputs of each
    they have scored."""
    samples = list(
        RubricSample.objects.filter(evaluators=evaluator)
        .annotate(n_entries=Count("entries"))
        .order_by("-created_at")
    )
    scored = dict(
        RubricSampleEntry.objects.filter(sample__in=samples)
        .filter(HumanJudgement.objects.scored_by(evaluator))
        .order_by()
        .values("sample_id")
        .annotate(n=Count("pk"))
        .values_list("sample_id", "n")
    )
    return [(sample, scored.get(sample.pk, 0)) for sample in samples]
