"""Tighten a build's filter and re-run only what it affects.

``tighten`` raises one threshold (``rules.THRESHOLD_STAGES``), records it on the build (its
config, the provenance's ``tightenings``; the stage row's ``settings`` when the stage starts),
puts back the samples the filter had kept (``rules.affected_samples``) at that stage and every
later one, and starts the filter stage through the pipeline's ``runner.start_stage``; the
pipeline then runs the following stages as usual. Samples the filter dropped, samples dropped
before it, samples an annotator dropped and the other turns of their dialogues are left as they are.

The race it prevents: a stage job still claiming rows while its rows are deleted. The build row
is locked and the re-run refused while any stage job is queued or running (``runner.BuildBusy``).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from ml.builder.config import BuildConfig
from ml.builder.models import (
    Build,
    BuildSample,
    BuildStage,
    BuildStatus,
    SampleStage,
    SampleStageStatus,
    SampleStatus,
    StageStatus,
)
from ml.builder.pages.queue import HUMAN_DROP
from ml.builder.pages.rules import (
    THRESHOLD_STAGES,
    WHOLE_NUMBER_THRESHOLDS,
    affected_samples,
    affected_stages,
    tightening_problem,
)
from ml.builder.runner import BuildBusy, provenance_of, start_stage
from webapp.models import Job, JobStatus, User

__all__ = ["BuildBusy", "TighteningRefused", "current_threshold", "tighten"]


class TighteningRefused(ValueError):
    """The tightening cannot be applied, with the reason in words."""


def _dropped_by_people(build: Build) -> set[int]:
    """Return the samples annotators dropped, with every turn of a dialogue one of them belongs to:
    a re-run must not bring them back, and a dialogue is redone whole or not at all."""
    dropped = BuildSample.objects.filter(build=build, status=SampleStatus.DROPPED, drop_reason=HUMAN_DROP)
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
    redone = affected_stages(setting)
    stored: Any = int(value) if setting in WHOLE_NUMBER_THRESHOLDS else float(value)
    config = BuildConfig.from_json({**build.config, setting: stored})
    with transaction.atomic():
        Build.objects.select_for_update().get(pk=build.pk)
        busy = BuildStage.objects.filter(build=build, job__status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
        if busy.exists():
            raise BuildBusy("wait for the running stage to finish (or cancel it) before tightening")
        reached = SampleStage.objects.filter(build=build, stage=stage, status=SampleStageStatus.DONE)
        outcomes = dict(reached.values_list("sample_id", "outcome"))
        samples = affected_samples(outcomes) - _dropped_by_people(build)
        SampleStage.objects.filter(build=build, stage__in=redone, sample_id__in=samples).delete()
        BuildSample.objects.filter(pk__in=samples, status=SampleStatus.DROPPED).update(
            status=SampleStatus.ACTIVE, dropped_at="", drop_reason=""
        )
        BuildStage.objects.filter(build=build, stage__in=redone).update(
            status=StageStatus.PENDING, finished_at=None
        )
        build.config = config.to_json()
        build.status = BuildStatus.RUNNING
        tightenings = [*build.provenance.get("tightenings", [])]
        tightenings.append(
            {
                "setting": setting,
                "stage": stage,
                "from": current,
                "to": stored,
                "samples": len(samples),
                "by": user.get_username() if user else "",
                "at": timezone.now().isoformat(),
            }
        )
        build.provenance = {**provenance_of(config), "tightenings": tightenings}
        build.save(update_fields=["config", "status", "provenance"])
        jobs = start_stage(build, stage, config, user)
    return jobs, len(samples)
