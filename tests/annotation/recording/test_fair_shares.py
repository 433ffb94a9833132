"""Dealing scripts to actors and takes to reviewers (pure): even shares, scenario mix kept, never self-review."""

from __future__ import annotations

from collections import Counter

from annotation.assignment import ReviewerLoad, ScriptToAssign, balanced_assignment, pick_reviewers


def test_scripts_are_dealt_round_the_actors_scenario_by_scenario() -> None:
    # 4 implicit (ids 1-4), 3 emotion-shift (ids 5-7) over actors 10, 20, 30: the larger scenario first,
    # and the turn carries on, so emotion-shift starts where implicit stopped.
    scripts = [ScriptToAssign(i, "implicit") for i in (1, 2, 3, 4)]
    scripts += [ScriptToAssign(i, "emotion-shift") for i in (5, 6, 7)]

    plan = balanced_assignment(scripts, [10, 20, 30])

    assert plan == {1: 10, 2: 20, 3: 30, 4: 10, 5: 20, 6: 30, 7: 10}


def test_shares_differ_by_at_most_one_overall_and_within_each_scenario() -> None:
    mix = {"implicit": 22, "audio-dominant": 22, "high-arousal": 22, "modality-conflict": 22, "emotion-shift": 12}
    scripts = []
    for scenario, count in mix.items():
        scripts += [ScriptToAssign(len(scripts) + n, scenario) for n in range(count)]
    actors = [1, 2, 3, 4, 5, 6, 7]

    plan = balanced_assignment(scripts, actors)

    totals = Counter(plan.values())
    assert max(totals.values()) - min(totals.values()) <= 1
    for scenario in mix:
        per_actor = Counter(plan[s.item_id] for s in scripts if s.scenario == scenario)
        counts = [per_actor.get(actor, 0) for actor in actors]
        assert max(counts) - min(counts) <= 1, scenario


def test_the_actors_with_fewest_scripts_get_the_odd_ones() -> None:
    plan = balanced_assignment([ScriptToAssign(i, "implicit") for i in range(4)], [1, 2, 3], {1: 9, 2: 0, 3: 4})
    assert Counter(plan.values()) == {2: 2, 3: 1, 1: 1}


def test_reviewers_are_the_least_loaded_and_never_the_actor() -> None:
    loads = [ReviewerLoad(1, 0, 5), ReviewerLoad(2, 0, 3), ReviewerLoad(3, 1, 0), ReviewerLoad(4, 0, 3)]
    assert pick_reviewers(loads, exclude={2}, count=3) == [4, 1, 3]


def test_reviews_spread_evenly_over_many_takes() -> None:
    pending = {user: 0 for user in range(1, 6)}
    total = dict(pending)
    for take in range(30):
        actor = 1 + take % 5  # every reviewer here also acts, so each take has one excluded
        loads = [ReviewerLoad(user, pending[user], total[user]) for user in pending]
        for user in pick_reviewers(loads, exclude={actor}, count=3):
            pending[user] += 1
            total[user] += 1
        if take % 2:  # reviewers finish some of their work as they go
            for user in pending:
                pending[user] = max(0, pending[user] - 1)
    assert set(total.values()) == {18}, total
