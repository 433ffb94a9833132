"""Dealing scripts to actors and takes to reviewers (pure): even shares, scenario mix kept, never self-review."""

from __future__ import annotations

from collections import Counter

from annotation.recording.assignment import ScriptToAssign, Workload, balanced_assignment, pick_least_loaded


def test_scripts_are_dealt_round_the_actors_scenario_by_scenario() -> None:
    # 4 implicit (ids 1-4), 3 emotion-shift (ids 5-7) over actors 10, 20, 30: the larger scenario first,
    # and the turn carries on, so emotion-shift starts where implicit stopped.
    scripts = [ScriptToAssign(i, "implicit") for i in (1, 2, 3, 4)]
    scripts += [ScriptToAssign(i, "emotion-shift") for i in (5, 6, 7)]

    plan = balanced_assignment(scripts, [10, 20, 30])

    assert plan == {1: 10, 2: 20, 3: 30, 4: 10, 5: 20, 6: 30, 7: 10}


def test_shares_differ_by_at_most_one_overall_and_within_each_scenario() -> None:
    mix = {
        "implicit": 22,
        "audio-dominant": 22,
        "high-arousal": 22,
        "modality-conflict": 22,
        "emotion-shift": 12,
    }
    scripts: list[ScriptToAssign] = []
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
    plan = balanced_assignment(
        [ScriptToAssign(i, "implicit") for i in range(4)], [1, 2, 3], {1: 9, 2: 0, 3: 4}
    )
    assert Counter(plan.values()) == {2: 2, 3: 1, 1: 1}


def test_reviewers_are_the_least_loaded_and_never_the_actor() -> None:
    loads = [Workload(1, 0, 5), Workload(2, 0, 3), Workload(3, 1, 0), Workload(4, 0, 3)]
    assert pick_least_loaded(loads, exclude={2}, count=3) == [4, 1, 3]


def test_reviews_spread_evenly_over_many_takes() -> None:
    assigned = {user: 0 for user in range(1, 6)}
    for _take in range(30):
        loads = [Workload(user, assigned[user], assigned[user]) for user in assigned]
        for user in pick_least_loaded(loads, exclude={99}, count=3):
            assigned[user] += 1
    assert assigned == {1: 18, 2: 18, 3: 18, 4: 18, 5: 18}


def test_reviewers_who_also_act_sit_out_their_own_takes_and_stay_within_two() -> None:
    assigned = {user: 0 for user in range(1, 6)}
    for take in range(30):
        actor = 1 + take % 5
        loads = [Workload(user, assigned[user], assigned[user]) for user in assigned]
        chosen = pick_least_loaded(loads, exclude={actor}, count=3)
        assert actor not in chosen and len(chosen) == 3
        for user in chosen:
            assigned[user] += 1
    # Sitting out one's own take can leave one reviewer a review behind while another is one ahead.
    assert sum(assigned.values()) == 90
    assert max(assigned.values()) - min(assigned.values()) <= 2


def test_a_reviewer_with_a_backlog_gets_new_takes_last() -> None:
    # Reviewer 1 has reviewed most but has nothing waiting; reviewer 2 has a queue of five.
    loads = [Workload(1, 0, 40), Workload(2, 5, 6), Workload(3, 1, 2), Workload(4, 1, 1)]
    assert pick_least_loaded(loads, exclude=set(), count=3) == [1, 4, 3]
