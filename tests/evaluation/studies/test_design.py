"""Study design: stratified sampling, balanced blind assignment, and presentation order."""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise, permutations

import pytest

from evaluation.studies.design import (
    DIMENSIONS,
    Stimulus,
    StudyDesignError,
    allocate_stratified,
    can_order,
    dimensions_for,
    distribute_ratings,
    order_without_repeats,
    plan_study,
    sample_stratified,
    trap_sentence,
)


def test_allocation_is_proportional_with_largest_remainder():
    # shares 7 * 10/20 = 3.5, 7 * 6/20 = 2.1, 7 * 4/20 = 1.4 -> floors 3, 2, 1; the one left goes to 0.5
    assert allocate_stratified({"implicit": 10, "neutral": 6, "conflict": 4}, 7) == {
        "implicit": 4,
        "neutral": 2,
        "conflict": 1,
    }
    # ties in the remainder are broken by name: 2 * 1/3 = 0.667 each, floors 0, two left
    assert allocate_stratified({"b": 1, "a": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}


def test_allocation_refuses_more_items_than_exist():
    with pytest.raises(StudyDesignError, match="only 3 are eligible"):
        allocate_stratified({"a": 2, "b": 1}, 4)


def test_stratified_sample_is_reproducible_and_respects_strata():
    strata = {"implicit": [f"i{n}" for n in range(10)], "shift": [f"s{n}" for n in range(5)]}
    first = sample_stratified(strata, 6, random.Random(7))
    assert first == sample_stratified(strata, 6, random.Random(7))
    assert len(set(first)) == 6
    assert Counter(key[0] for key in first) == {"i": 4, "s": 2}


def test_every_output_gets_k_different_evaluators_and_loads_are_even():
    outputs = [f"o{n}" for n in range(20)]
    evaluators = [f"e{n}" for n in range(7)]
    shares = distribute_ratings(outputs, evaluators, 3, random.Random(1))
    raters_per_output = Counter(output for share in shares.values() for output in share)
    assert set(raters_per_output.values()) == {3}
    assert all(len(set(share)) == len(share) for share in shares.values())
    # 60 ratings over 7 evaluators: 8 or 9 each
    assert {len(share) for share in shares.values()} <= {8, 9}


def test_more_ratings_than_evaluators_is_refused():
    with pytest.raises(StudyDesignError, match="at least 3 evaluators; 2 invited"):
        distribute_ratings(["o1"], ["e1", "e2"], 3, random.Random(0))


@pytest.mark.parametrize(
    "items", ["aab", "aaab", "aabb", "aaabb", "abc", "aaaabbc", "aabbcc", "a", "ab", "aaa"]
)
@pytest.mark.parametrize("not_first", [None, "a", "b"])
def test_can_order_agrees_with_brute_force(items: str, not_first: str | None):
    possible = any(
        all(x != y for x, y in pairwise(order)) and order[0] != not_first
        for order in set(permutations(items))
    )
    assert can_order(Counter(items), not_first) == possible


@pytest.mark.parametrize("items", ["aaabb", "aaaabbc", "aabbcc", "aaaaabbbbc", "abababa", "aaab"])
@pytest.mark.parametrize("previous", [None, "a", "b"])
def test_tight_line_ups_are_found_whenever_one_exists(items: str, previous: str | None):
    stimuli = [Stimulus(f"{item}{n}", item, "rated") for n, item in enumerate(items)]
    for seed in range(10):
        ordered = order_without_repeats(stimuli, random.Random(seed), previous_item=previous)
        if not can_order(Counter(items), previous):
            assert ordered is None
            continue
        assert ordered is not None and len(ordered) == len(items)
        line = [previous, *(s.item for s in ordered)]
        assert all(x != y for x, y in pairwise(line) if x is not None)


def test_order_never_puts_one_item_twice_in_a_row():
    stimuli = [Stimulus(f"{item}{n}", item, "rated") for item in "abcd" for n in range(3)]
    stimuli += [Stimulus("x1", "a", "trap"), Stimulus("x2", "e", "gold")]
    for seed in range(40):
        ordered = order_without_repeats(stimuli, random.Random(seed), previous_item="a")
        assert ordered is not None
        assert sorted(s.key for s in ordered) == sorted(s.key for s in stimuli)
        items = ["a", *(s.item for s in ordered)]
        assert all(x != y for x, y in pairwise(items))


def test_order_reports_an_impossible_line_up():
    stimuli = [Stimulus("a1", "a", "rated"), Stimulus("a2", "a", "rated"), Stimulus("b1", "b", "rated")]
    assert order_without_repeats(stimuli, random.Random(0), previous_item="a") is None


def _paper_sized_study(seed: int) -> dict[str, list[Stimulus]]:
    # the paper's study: 6 systems x 20 items, 3 ratings per output, here with 5 evaluators
    rated = [Stimulus(f"s{s}-i{i}", f"i{i}", "rated") for s in range(6) for i in range(20)]
    checks = [Stimulus("trap", "i3", "trap"), Stimulus("gold-good", "g1", "gold")]
    training = [Stimulus("train1", "t1", "training"), Stimulus("train2", "t2", "training")]
    evaluators = [f"e{n}" for n in range(5)]
    return plan_study(rated, evaluators, 3, quality_checks=checks, training=training, seed=seed)


def test_plan_is_balanced_blind_to_order_and_reproducible():
    plan = _paper_sized_study(seed=11)
    rated_counts = Counter(s.key for order in plan.values() for s in order if s.kind == "rated")
    assert len(rated_counts) == 120 and set(rated_counts.values()) == {3}
    # 360 ratings over 5 evaluators: exactly 72 each
    assert {sum(s.kind == "rated" for s in order) for order in plan.values()} == {72}
    for order in plan.values():
        assert [s.kind for s in order[:2]] == ["training", "training"]
        assert {"trap", "gold-good"} <= {s.key for s in order}
        assert len({s.key for s in order}) == len(order)
        assert all(a.item != b.item for a, b in pairwise(order))
    orders = [[s.key for s in order] for order in plan.values()]
    assert len({tuple(order) for order in orders}) == 5  # randomised per evaluator
    assert plan == _paper_sized_study(seed=11)
    assert plan != _paper_sized_study(seed=12)


def test_plan_refuses_a_study_that_must_repeat_an_item():
    rated = [Stimulus("a", "i1", "rated"), Stimulus("b", "i1", "rated")]
    with pytest.raises(StudyDesignError, match="same item twice in a row"):
        plan_study(rated, ["e1"], 1)


def test_dimensions_and_trap_wording():
    assert [d.key for d in dimensions_for(["prosody", "content_helpfulness"])] == [
        "content_helpfulness",
        "prosody",
    ]
    assert all(len(d.anchors) == 5 for d in DIMENSIONS.values())
    assert DIMENSIONS["naturalness"].anchor_for(5).startswith("Excellent")
    assert trap_sentence(2) == "This is an attention check. Please select score 2."
    with pytest.raises(StudyDesignError, match="unknown rating dimensions: loudness"):
        dimensions_for(["loudness"])
