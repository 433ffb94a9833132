"""Planning by index: the same (seed, index) gives the same sample; combinations are covered evenly."""

from __future__ import annotations

from collections import Counter

import pytest

from ml.builder.logic.planning import TopicRef, plan_sample, turn_id

TOPICS = [TopicRef(1, "Work / Career / a missed promotion"), TopicRef(2, "Family / Parents / illness")]
EMOTIONS, INTENSITIES, VARIANTS = ("sad", "angry"), ("low", "high"), ("standard", "role-play", "text-neutral")


def _plan(index: int, seed: int = 1, kind: str = "single"):
    return plan_sample(3, seed, index, TOPICS, EMOTIONS, INTENSITIES, VARIANTS, ("en-us", "en-gb"), kind=kind)


def test_a_plan_depends_on_seed_and_index_alone() -> None:
    assert _plan(5) == _plan(5)
    assert [_plan(i).topic for i in range(20)] != [_plan(i, seed=2).topic for i in range(20)]


def test_every_emotion_intensity_variant_combination_is_covered_evenly() -> None:
    combos = Counter((p.emotion, p.intensity, p.variant) for p in (_plan(i) for i in range(24)))
    assert len(combos) == 12 and set(combos.values()) == {2}


def test_ids_name_the_build_sample_dialogue_and_turn() -> None:
    assert _plan(0).external_id == "B3-000001"
    assert _plan(0, kind="dialogue").external_id == "B3-D00001"
    assert turn_id("B3-D00001", 2) == "B3-D00001.t2"


def test_a_taxonomy_without_topics_cannot_be_planned() -> None:
    with pytest.raises(ValueError, match="no active topic"):
        plan_sample(1, 1, 0, [], EMOTIONS, INTENSITIES, VARIANTS, ("en-us",))
