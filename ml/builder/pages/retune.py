"""Tighten a build's filter and re-run only what it affects.

``tighten`` raises one threshold (``rules.THRESHOLD_STAGES``), records it on the build (its
config, the provenance's ``tightenings``; the stage row's ``settings`` when the stage starts),
and re-runs, through the pipeline's one re-run path ``runner.rerun_from``, the samples the filter
had kept (``rules.affected_samples``) at that stage and every later one; the pipeline then runs
the following stages as usual. Samples the filter dropped, samples dropped
before it, samples an annotator dropped and the other turns of their dialogues are left as they are.

The race it prevents: a stage job still claiming rows while its rows are deleted. The build row
is locked and the re-run refused while any stage job is queued or running (``runner.BuildBusy``).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ml.builder.config import BuildConfig
from ml.builder.models import Build, BuildSample, SampleStage, SampleStageStatus, SampleStatus
from ml.builder.pages.queue import HUMAN_DROP_REASONS
from ml.builder.pages.rules import (
    THRESHOLD_STAGES,
    WHOLE_NUMBER_THRESHOLDS,
    affected_samples,
    tightening_problem,
)
from ml.builder.runner import BuildBusy, rerun_from
from webapp.models import Job, User

__all__ = ["BuildBusy", "TighteningRefused", "current_threshold", "tighten"]


class TighteningRefused(ValueError):
    """The tightening cannot be applied, with the reason in words."""


def _dropped_by_people(build: Build) -> set[int]:
    """Return the samples annotators dropped, with every turn of a dialogue one of them belongs to:
    a re-run must not bring them back, and a dialogue is redone whole or not at all."""
    dropped = BuildSample.objects.filter(
        build=build, status=SampleStatus.DROPPED, drop_reason__in=HUMAN_DROP_REASONS
    )
    dialogues = dropped.exclude(dialogue__isnull=True).values("dialogue_id")
    turns = BuildSample.objects.filter(build=build, dialogue_id__in=dialogues)
    return set(dropped.values_list("pk", flat=True)) | set(turns.values_list("pk", flat=True))


def current_threshold(build: Build, setting: str) -> float:
    """Return the threshold the build runs with now (its config, else the default)."""
    return float(getattr(BuildConfig.from_json(build.config), setting))


def tighten(build: Build, setting: str, value: float, user: User | None) -> tuple[list[Job], int]:
    """Raise `setting` to `value` and re-run its stage and the later ones for the samples it kept.

    Return the started jobs and how many samples go through again.
    """
    current = current_threshold(build, setting)
    problem = tightening_problem(setting, current, value)
    if problem:
        raise TighteningRefused(problem)
    stage = THRESHOLD_STAGES[setting]
    stored: Any = int(value) if setting in WHOLE_NUMBER_THRESHOLDS else float(value)
    with transaction.atomic():
        # The build row is locked while the samples are chosen; rerun_from locks it again (same
        # transaction) and refuses while a stage job is queued or running.
        Build.objects.select_for_update().get(pk=build.pk)
        reached = SampleStage.objects.filter(build=build, stage=stage, status=SampleStageStatus.DONE)
        outcomes = dict(reached.values_list("sample_id", "outcome"))
        samples = affected_samples(outcomes) - _dropped_by_people(build)
        note = {"setting": setting, "from": current, "to": stored}
        return rerun_from(build, stage, {setting: stored}, user, samples=samples, note=note)
