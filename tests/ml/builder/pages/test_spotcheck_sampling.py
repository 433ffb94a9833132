"""The spot-check draw: seeded, stratified, deterministic, only finished samples, never twice."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable

import pytest

from ml.builder.models import BuildSample, SpotCheck
from ml.builder.pages.queue import draw_spot_checks, stratum_of
from ml.builder.pages.sampling import SamplingProblem, allocate, draw_from_stratum, sample_size
from tests.ml.builder.pages.spotcheck_builds import finished_build


def stratified_sample(
    candidates: Iterable[tuple[int, Hashable]],
    seed: int | str,
    *,
    fraction: float | None = None,
    count: int | None = None,
) -> list[int]:
    """Draw from an in-memory list at once: the oracle for the database draw, made stratum by stratum."""
    strata: dict[Hashable, list[int]] = defaultdict(list)
    for sample_id, stratum in candidates:
        strata[stratum].append(sample_id)
    total = sample_size(sum(len(ids) for ids in strata.values()), fraction=fraction, count=count)
    shares = allocate({stratum: len(ids) for stratum, ids in strata.items()}, total)
    chosen: list[int] = []
    for stratum, ids in strata.items():
        chosen.extend(draw_from_stratum(ids, shares[stratum], seed, stratum))
    return sorted(chosen)


POPULATION = [(pk, "a" if pk % 4 else "b") for pk in range(1, 101)]  # 75 in "a", 25 in "b"


def test_the_same_seed_draws_the_same_samples_in_any_order() -> None:
    first = stratified_sample(POPULATION, 3, fraction=0.2)
    again = stratified_sample(list(reversed(POPULATION)), 3, fraction=0.2)
    other = stratified_sample(POPULATION, 4, fraction=0.2)
    assert first == again
    assert first != other


def test_strata_get_their_proportional_share() -> None:
    chosen = stratified_sample(POPULATION, 3, count=20)
    strata = Counter("a" if pk % 4 else "b" for pk in chosen)
    assert strata == {"a": 15, "b": 5}


def test_largest_remainder_allocation() -> None:
    # 10 over 6/3/1: quotas 6, 3, 1 exactly; 4 over the same: 2.4, 1.2, 0.4 -> 2, 1, then the 0.4 gets one
    assert allocate({"x": 6, "y": 3, "z": 1}, 10) == {"x": 6, "y": 3, "z": 1}
    assert allocate({"x": 6, "y": 3, "z": 1}, 4) == {"x": 2, "y": 1, "z": 1}


def test_sizes() -> None:
    assert sample_size(60, fraction=0.02) == 2  # 1.2 rounds up
    assert sample_size(10, fraction=0.001) == 1
    assert sample_size(10, count=50) == 10
    for bad in ({}, {"fraction": 0.1, "count": 2}, {"fraction": 0.0}, {"fraction": 1.5}, {"count": 0}):
        with pytest.raises(SamplingProblem):
            sample_size(10, **bad)


def test_a_build_draw_takes_finished_samples_only_spread_over_variants(db) -> None:
    # given 12 finished single-turn samples over three variants, 2 dialogues, and 3 dropped samples
    build = finished_build(single=12, dialogues=2, drops={"consistency": ["not_confident"] * 3})

    # when a third of the finished samples is drawn
    opened = draw_spot_checks(build, fraction=1 / 3)

    # then 6 of the 18 finished samples, none dropped, every stratum represented: quotas 4/3 for each
    # single-turn variant and 2 for the six dialogue turns; the one seat left over goes to the
    # tied remainders' first stratum by name
    checks = SpotCheck.objects.filter(build=build).select_related("sample")
    assert opened == 6 == checks.count()
    assert all(check.sample.status == "active" for check in checks)
    strata = Counter(stratum_of(check.sample.prompt_variant, check.sample.dialogue_id) for check in checks)
    assert strata == {
        "modality-conflict/single": 2,
        "role-play/single": 1,
        "standard/single": 1,
        "standard/dialogue": 2,
    }


def test_a_second_draw_adds_other_samples(db) -> None:
    build = finished_build(single=12)
    draw_spot_checks(build, count=4)
    first = set(SpotCheck.objects.values_list("sample_id", flat=True))
    assert draw_spot_checks(build, count=4) == 4
    assert len(set(SpotCheck.objects.values_list("sample_id", flat=True)) - first) == 4
    assert draw_spot_checks(build, count=10) == 4  # only four unchecked samples are left


def test_without_a_size_the_builds_rate_applies(db) -> None:
    build = finished_build(single=12)
    build.config = {**build.config, "spot_check_rate": 0.25}
    build.save()
    assert draw_spot_checks(build) == 3


def test_the_database_draw_is_the_pure_draw(db) -> None:
    # given the same candidates, strata and seed, the draw made stratum by stratum in the database
    # picks exactly what the pure function picks from the whole list
    build = finished_build(single=12, dialogues=2)
    pairs = [
        (sample.pk, stratum_of(sample.prompt_variant, sample.dialogue_id))
        for sample in BuildSample.objects.filter(build=build).finished()
    ]
    expected = stratified_sample(pairs, f"{build.seed}:0", fraction=1 / 3)

    draw_spot_checks(build, fraction=1 / 3)

    assert sorted(SpotCheck.objects.filter(build=build).values_list("sample_id", flat=True)) == expected
