"""Who records which script, and who reviews which take: fair shares as plain functions.

Scripts are dealt to actors like cards: grouped by scenario, then handed round the chosen actors
in turn, the turn carrying on from one scenario to the next. Any run of consecutive cards dealt
round n players gives each of them the same number, give or take one, so every actor ends up
with the same number of scripts (give or take one) and the same number of each scenario (give
or take one). The first turns go to the actors with the fewest scripts already, so the odd ones
out even out over repeated batches.

Reviewers (and annotators, in `annotation.labelling.assignment`) are picked by least work: fewest
tasks waiting, then fewest ever, so over many takes every one gets the same share and nobody's
queue grows while another's is empty.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ScriptToAssign:
    item_id: int
    scenario: str


@dataclass(frozen=True)
class Workload:
    user_id: int
    pending: int  # tasks (reviews, annotations) assigned and not yet submitted
    total: int  # tasks ever assigned


def balanced_assignment(
    scripts: Sequence[ScriptToAssign],
    actor_ids: Sequence[int],
    current_load: Mapping[int, int] | None = None,
) -> dict[int, int]:
    """Return {item_id: actor_id} sharing the scripts evenly over the actors and within each scenario.

    Scenarios are dealt largest first and items in id order, so the result depends only on the
    inputs. `current_load` (scripts each actor already holds) decides who is dealt to first.
    """
    actors = list(dict.fromkeys(actor_ids))
    if not actors:
        raise ValueError("choose at least one actor")
    load = current_load or {}
    order = sorted(range(len(actors)), key=lambda index: (load.get(actors[index], 0), index))
    rotation = [actors[index] for index in order]

    by_scenario: dict[str, list[int]] = defaultdict(list)
    for script in scripts:
        by_scenario[script.scenario].append(script.item_id)
    scenarios = sorted(by_scenario, key=lambda name: (-len(by_scenario[name]), name))

    plan: dict[int, int] = {}
    turn = 0
    for scenario in scenarios:
        for item_id in sorted(by_scenario[scenario]):
            plan[item_id] = rotation[turn % len(rotation)]
            turn += 1
    return plan


def dialogue_assignment(
    dialogues: Sequence[tuple[int, int]],
    actor_ids: Sequence[int],
    current_load: Mapping[int, int] | None = None,
) -> dict[int, int]:
    """Return {dialogue_id: actor_id} for (dialogue_id, turns) pairs: each dialogue whole to one actor.

    A dialogue is never split (one user voice records every turn, paper B.5), so dialogues are
    dealt as units, each to the actor holding the fewest scripts so far (then the first chosen),
    largest dialogues first; the load grows by the dialogue's turns as it is dealt.
    """
    actors = list(dict.fromkeys(actor_ids))
    if not actors:
        raise ValueError("choose at least one actor")
    load = {actor: (current_load or {}).get(actor, 0) for actor in actors}
    plan: dict[int, int] = {}
    for dialogue_id, turns in sorted(dialogues, key=lambda pair: (-pair[1], pair[0])):
        actor = min(actors, key=lambda candidate: (load[candidate], actors.index(candidate)))
        plan[dialogue_id] = actor
        load[actor] += turns
    return plan


def pick_least_loaded(candidates: Sequence[Workload], *, exclude: Collection[int], count: int) -> list[int]:
    """Return the ids of up to `count` people with the least work, never one in `exclude`."""
    eligible = [candidate for candidate in candidates if candidate.user_id not in exclude]
    eligible.sort(key=lambda candidate: (candidate.pending, candidate.total, candidate.user_id))
    return [candidate.user_id for candidate in eligible[:count]]
