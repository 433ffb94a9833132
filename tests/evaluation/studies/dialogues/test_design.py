"""Sampling dialogues per system (evaluation.studies.design.sample_dialogues), checked by hand."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from evaluation.studies.design import StudyDesignError, sample_dialogues

JOB = ["j1", "j2", "j3", "j4"]
LOSS = ["l1", "l2"]
STRATA = {"job": JOB, "loss": LOSS}


def _topic(key: str) -> str:
    return "job" if key.startswith("j") else "loss"


def test_every_system_gets_the_same_stratified_dialogues():
    sample = sample_dialogues(STRATA, ["A", "B", "C"], 3, random.Random(1))

    assert sample["A"] == sample["B"] == sample["C"]
    # 3 of 6 dialogues, 4 job and 2 loss: shares 2.0 and 1.0
    assert Counter(_topic(key) for key in sample["A"]) == {"job": 2, "loss": 1}
    assert len(set(sample["A"])) == 3


def test_the_same_seed_gives_the_same_sample_and_seeds_differ():
    draws = {
        seed: sample_dialogues(STRATA, ["A", "B"], 2, random.Random(seed), same_for_all=False)
        for seed in range(8)
    }
    assert draws[3] == sample_dialogues(STRATA, ["A", "B"], 2, random.Random(3), same_for_all=False)
    assert len({repr(draw) for draw in draws.values()}) > 1


def test_a_spread_sample_uses_each_dialogue_once_when_the_budget_equals_the_pool():
    # 3 systems x 2 = 6 slots over 6 dialogues. The line puts job dialogues at 1/8, 3/8, 5/8, 7/8
    # and loss ones at 1/4, 3/4: job, loss, job, job, loss, job. A takes places 0-1, B 2-3, C 4-5.
    sample = sample_dialogues(STRATA, ["A", "B", "C"], 2, random.Random(7), same_for_all=False)

    assert [[_topic(key) for key in sample[system]] for system in "ABC"] == [
        ["job", "loss"],
        ["job", "job"],
        ["loss", "job"],
    ]
    assert sorted(key for keys in sample.values() for key in keys) == sorted(JOB + LOSS)


def test_a_spread_sample_balances_dialogues_when_systems_share_them():
    # 3 systems x 4 = 12 slots over 6 dialogues: every dialogue serves exactly two systems,
    # A places 0-3, B places 4, 5, 0, 1, C places 2-5.
    sample = sample_dialogues(STRATA, ["A", "B", "C"], 4, random.Random(2), same_for_all=False)

    assert set(Counter(key for keys in sample.values() for key in keys).values()) == {2}
    assert all(len(set(keys)) == 4 for keys in sample.values())
    assert sample["B"][2:] == sample["A"][:2] and sample["C"] == sample["A"][2:] + sample["B"][:2]


def test_an_uneven_budget_differs_by_at_most_one_use_per_dialogue():
    # 2 systems x 3 = 6 slots over 5 dialogues: one dialogue serves both systems, the rest one each.
    pool = {"only": ["d1", "d2", "d3", "d4", "d5"]}
    sample = sample_dialogues(pool, ["A", "B"], 3, random.Random(4), same_for_all=False)

    assert sorted(Counter(key for keys in sample.values() for key in keys).values()) == [1, 1, 1, 1, 2]
    assert sample["B"][2] == sample["A"][0]


def test_a_larger_pool_than_the_budget_draws_a_stratified_subset():
    pool = {"job": [f"j{n}" for n in range(6)], "loss": [f"l{n}" for n in range(3)]}
    # 2 systems x 3 = 6 of 9 dialogues: 4 job and 2 loss, each used once.
    sample = sample_dialogues(pool, ["A", "B"], 3, random.Random(9), same_for_all=False)

    used = [key for keys in sample.values() for key in keys]
    assert len(set(used)) == 6 and Counter(key[0] for key in used) == {"j": 4, "l": 2}


@pytest.mark.parametrize(
    ("per_system", "systems", "message"),
    [
        (7, ["A"], "7 dialogues per system were asked for, but only 6"),
        (0, ["A"], "at least one dialogue"),
        (2, [], "at least one system"),
        (2, ["A", "A"], "each once"),
    ],
)
def test_impossible_samples_are_refused_with_a_reason(per_system, systems, message):
    with pytest.raises(StudyDesignError, match=message):
        sample_dialogues(STRATA, systems, per_system, random.Random(0))
