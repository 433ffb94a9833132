"""Listening studies over systems' spoken replies to EchoMind deliveries, with the studies machinery.

Each sample is one system's reply (under one prompt strength) to one delivery: raters first hear
the delivery's accepted take, as they hear a user's query in any study, then the reply. Replies are
frozen, planned, screened and summarised as benchmark outputs are (`evaluation.studies.creation.items`):
the audio is re-encoded under a random key, so nothing a rater receives names the system.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from django.db.models import QuerySet

from evaluation.echomind.models import Reply
from evaluation.outputs.models import System
from evaluation.studies.creation.items import StudySpec, create_study
from evaluation.studies.design import dimensions_for
from evaluation.studies.models import Study
from evaluation.studies.samples import Sample
from webapp.models import User

# Stored as the study's benchmark version, so the study says what it rated (and is found again).
STUDY_VERSION_PREFIX = "echomind-replies"
DEFAULT_INSTRUCTIONS = (
    "You will hear a person say a short sentence, then a voice assistant's spoken reply. The words "
    "are often plain; how the person says them, and what can be heard around them, matters. Listen "
    "to the whole reply (use headphones in a quiet room), then rate it on each question from 1 (bad) "
    "to 5 (excellent). There are no right answers, except for the occasional attention check, which "
    "tells you what to choose. The first samples are practice and are not counted."
)


def reply_samples(
    systems: Sequence[System], prompt: str, *, rates_audio: bool, rates_content: bool
) -> dict[int, dict[int, Sample]]:
    """Return delivery item -> system -> its reply as a study sample, for the replies a rater can
    judge (audio for audio dimensions, words for content), stratified by dimension and delivery."""
    replies = (
        Reply.objects.in_use()
        .filter(system__in=systems, prompt=prompt, delivery__item__recording__isnull=False)
        .select_related("delivery__item__recording", "delivery__delivery_set__attribute")
    )
    if rates_audio:
        replies = replies.exclude(audio_key="")
    if rates_content:
        replies = replies.exclude(text="")
    samples: dict[int, dict[int, Sample]] = {}
    for reply in replies:
        delivery = reply.delivery
        samples.setdefault(delivery.item_id, {})[reply.system_id] = Sample(
            item=delivery.item,
            system_id=reply.system_id,
            text=reply.text,
            audio_key=reply.audio_key,
            stratum=f"{delivery.delivery_set.attribute.coarse} {delivery.role}",
            order=reply.pk,
        )
    return samples


def create_reply_study(spec: StudySpec, prompt: str, created_by: User) -> Study:
    """Create a study of the chosen systems' replies under `prompt` (a `Reply.Prompt`); raises
    StudyDesignError, with a message for the admin, as any study does."""
    if prompt not in Reply.Prompt.values:
        raise ValueError(f"unknown prompt strength {prompt!r}")
    dimensions = dimensions_for(spec.dimensions)
    samples = reply_samples(
        spec.systems,
        prompt,
        rates_audio=any(dimension.modality == "audio" for dimension in dimensions),
        rates_content=any(dimension.modality == "content" for dimension in dimensions),
    )
    # Gold outputs are benchmark outputs: a reply study checks its raters with trapping items.
    spec = replace(spec, benchmark_version=f"{STUDY_VERSION_PREFIX}:{prompt}", gold=())
    return create_study(spec, created_by, samples=samples)


def reply_studies() -> QuerySet[Study]:
    """Return the listening studies over EchoMind replies, newest first."""
    return Study.objects.filter(benchmark_version__startswith=f"{STUDY_VERSION_PREFIX}:")
