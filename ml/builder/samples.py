"""Which of a build's samples are finished: the one rule the export, the spot-check draw and the
build page share (a module of its own so the export can read the spot-check fixes without a cycle)."""

from __future__ import annotations

from django.db.models import QuerySet

from ml.builder.models import Build, BuildSample, SampleStatus


def finished_samples(build: Build) -> QuerySet[BuildSample]:
    """Return the samples that passed every stage (and no annotator dropped)."""
    return BuildSample.objects.filter(build=build, status=SampleStatus.ACTIVE).exclude(response_audio_key="")
