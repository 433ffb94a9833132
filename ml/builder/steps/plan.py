"""The planning stage: make the build's samples and dialogues from the taxonomy, in streamed batches.

Each sample's plan depends on (seed, index) alone (``logic.planning``) and rows are inserted with
the unique (build, external_id) constraint ignoring those that exist, so a planning job that died
half-way is simply run again.
"""

from __future__ import annotations

from collections.abc import Callable

from ml.builder.config import BuildConfig
from ml.builder.logic.planning import SamplePlan, TopicRef, plan_sample, turn_id
from ml.builder.models import Build, BuildDialogue, BuildSample, TaxonomyTopic

PLAN_BATCH = 1000


def active_topics() -> list[TopicRef]:
    """Return every active topic with its path (topics are few next to samples)."""
    rows = TaxonomyTopic.objects.filter(active=True).select_related("subcategory__domain").order_by("id")
    return [TopicRef(topic.pk, topic.path) for topic in rows]


def _sample(
    build: Build, plan: SamplePlan, external_id: str, turn: int = 0, dialogue_id: int | None = None
) -> BuildSample:
    return BuildSample(
        build=build,
        external_id=external_id,
        dialogue_id=dialogue_id,
        turn=turn,
        topic_id=plan.topic.id,
        topic_path=plan.topic.path,
        emotion=plan.emotion,
        intensity=plan.intensity,
        prompt_variant=plan.variant,
        voice={"voice": plan.voice},
    )


def plan_build(build: Build, config: BuildConfig, progress: Callable[[float, str], None]) -> dict[str, int]:
    """Create the build's samples (single-turn, then dialogues with their turns); return how many."""
    topics = active_topics()
    choices = (topics, config.emotions, config.intensities, config.variants, config.voices)
    total = build.single_turn_count + build.dialogue_count
    for start in range(0, build.single_turn_count, PLAN_BATCH):
        plans = [
            plan_sample(build.pk, build.seed, index, *choices)
            for index in range(start, min(start + PLAN_BATCH, build.single_turn_count))
        ]
        BuildSample.objects.bulk_create(
            [_sample(build, plan, plan.external_id) for plan in plans], ignore_conflicts=True
        )
        progress((start + len(plans)) / max(total, 1), f"Planned {start + len(plans)} samples")
    for start in range(0, build.dialogue_count, PLAN_BATCH):
        plans = [
            plan_sample(build.pk, build.seed, index, *choices, kind="dialogue")
            for index in range(start, min(start + PLAN_BATCH, build.dialogue_count))
        ]
        BuildDialogue.objects.bulk_create(
            [
                BuildDialogue(
                    build=build,
                    external_id=plan.external_id,
                    topic_id=plan.topic.id,
                    topic_path=plan.topic.path,
                    prompt_variant=plan.variant,
                    voice={"voice": plan.voice},
                )
                for plan in plans
            ],
            ignore_conflicts=True,
        )
        ids = dict(
            BuildDialogue.objects.filter(
                build=build, external_id__in=[plan.external_id for plan in plans]
            ).values_list("external_id", "id")
        )
        turns = [
            _sample(build, plan, turn_id(plan.external_id, turn), turn, ids[plan.external_id])
            for plan in plans
            for turn in range(1, build.turns_per_dialogue + 1)
        ]
        BuildSample.objects.bulk_create(turns, ignore_conflicts=True)
        done = build.single_turn_count + start + len(plans)
        progress(done / max(total, 1), f"Planned {start + len(plans)} dialogues")
    return {
        "samples": BuildSample.objects.filter(build=build, dialogue__isnull=True).count(),
        "dialogues": BuildDialogue.objects.filter(build=build).count(),
        "turns": BuildSample.objects.filter(build=build, dialogue__isnull=False).count(),
    }
