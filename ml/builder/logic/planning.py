"""Which samples a build makes: taxonomy topic x emotion x intensity x prompt variant, by index.

The i-th sample's plan is a function of (seed, i) alone, so planning streams (no build is held in
memory) and a re-run of the planning stage makes exactly the same samples. Emotions, intensities
and variants cycle so every combination is covered evenly; topics are drawn at random.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from ml.builder.logic.voicing import pick_voice


@dataclass(frozen=True)
class TopicRef:
    id: int
    path: str  # "domain / subcategory / topic"


@dataclass(frozen=True)
class SamplePlan:
    index: int
    external_id: str
    topic: TopicRef
    emotion: str
    intensity: str
    variant: str
    voice: str


def sample_id(build_id: int, index: int) -> str:
    """Return the external id of a build's index-th single-turn sample ("B3-000001")."""
    return f"B{build_id}-{index + 1:06d}"


def dialogue_id(build_id: int, index: int) -> str:
    """Return the external id of a build's index-th dialogue ("B3-D00001")."""
    return f"B{build_id}-D{index + 1:05d}"


def turn_id(dialogue_external_id: str, turn: int) -> str:
    """Return the external id of a dialogue turn ("B3-D00001.t2", as annotation.dialogues names turns)."""
    return f"{dialogue_external_id}.t{turn}"


def plan_sample(
    build_id: int,
    seed: int,
    index: int,
    topics: Sequence[TopicRef],
    emotions: Sequence[str],
    intensities: Sequence[str],
    variants: Sequence[str],
    voices: Sequence[str],
    *,
    kind: str = "single",
) -> SamplePlan:
    """Return the plan of the index-th sample (kind "single") or dialogue (kind "dialogue")."""
    if not topics:
        raise ValueError("the taxonomy has no active topic to write about")
    rng = random.Random(f"{seed}:{kind}:{index}")
    emotion = emotions[index % len(emotions)]
    intensity = intensities[(index // len(emotions)) % len(intensities)]
    variant = variants[(index // (len(emotions) * len(intensities))) % len(variants)]
    external_id = sample_id(build_id, index) if kind == "single" else dialogue_id(build_id, index)
    return SamplePlan(
        index=index,
        external_id=external_id,
        topic=rng.choice(list(topics)),
        emotion=emotion,
        intensity=intensity,
        variant=variant,
        voice=pick_voice(rng, voices),
    )
