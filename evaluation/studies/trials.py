"""The design of comparison studies (CCR/CMOS, A/B, MUSHRA): trials and their counterbalancing.

Pure functions over plain keys (strings). Who rates which trial, and in what order, is the ACR
planner's (`design.plan_study`: each trial by `ratings_per_output` raters, loads even, no item
twice in a row); this module builds the trials and decides what each rater hears where:

- a pair (CCR, A/B) is heard in both orders across its raters, as evenly as possible, and each
  rater hears the first-listed sample first in about half of their pairs (`balanced_orders`), so
  neither a system's place nor a rater's bias for "first" or "second" leans the figures;
- a MUSHRA trial's conditions (systems, hidden reference, anchors) are shuffled per rater and
  trial (`shuffled`): the slider a condition lands on tells nothing.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from evaluation.studies.design import StudyDesignError


@dataclass(frozen=True)
class TrialPlan:
    """One trial: the item it is about and the conditions heard, in their canonical order (a
    reference first; else the systems' order); MUSHRA's hidden reference and anchors included."""

    item: str
    conditions: tuple[str, ...]


def pair_trials(systems: Sequence[str], reference: str | None = None) -> list[tuple[str, str]]:
    """Return the pairs of conditions one item is compared on: each system against the reference,
    or (without a reference) every pair of systems."""
    if reference is not None:
        if reference not in systems:
            raise StudyDesignError("the reference must be one of the study's systems")
        pairs = [(reference, system) for system in systems if system != reference]
    else:
        pairs = list(combinations(systems, 2))
    if not pairs:
        raise StudyDesignError("a comparison needs at least two systems")
    return pairs


def balanced_orders(shares: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], bool]:
    """Return (rater, trial) -> flipped: whether the rater hears the pair's second-listed sample first.

    `shares` is rater -> the pair trials they rate. Every trial is heard flipped by
    floor or ceil of half its raters, and every rater hears floor or ceil of half their trials
    flipped: an equitable 2-colouring of the edges of the bipartite rater-trial graph. Each vertex
    of odd degree is joined to one extra vertex, which makes every degree even; colours then
    alternate along an Euler circuit of each component (started at the extra vertex where it has
    one). A circuit passing through a vertex enters and leaves by edges of different colours, and a
    circuit of a bipartite component has even length, so its start is balanced too; a vertex loses
    at most its one extra edge, hence differs by at most one.
    """
    extra = ("extra", "")
    adjacency: dict[tuple[str, str], list[int]] = defaultdict(list)
    edges: list[tuple[tuple[str, str], tuple[str, str]]] = []

    def join(a: tuple[str, str], b: tuple[str, str]) -> None:
        adjacency[a].append(len(edges))
        adjacency[b].append(len(edges))
        edges.append((a, b))

    for rater, trials in sorted(shares.items()):
        for trial in trials:
            join(("rater", rater), ("trial", trial))
    real = len(edges)
    for vertex in sorted(adjacency):
        if len(adjacency[vertex]) % 2:
            join(vertex, extra)
    used = [False] * len(edges)
    colour: dict[int, bool] = {}
    starts = ([extra] if extra in adjacency else []) + sorted(adjacency)
    cursor: dict[tuple[str, str], int] = defaultdict(int)
    for start in starts:
        if cursor[start] >= len(adjacency[start]) or all(used[e] for e in adjacency[start]):
            continue
        # Hierholzer's algorithm, iterative: the circuit's edges in order.
        stack: list[tuple[tuple[str, str], int | None]] = [(start, None)]
        circuit: list[int] = []
        while stack:
            vertex, via = stack[-1]
            options = adjacency[vertex]
            while cursor[vertex] < len(options) and used[options[cursor[vertex]]]:
                cursor[vertex] += 1
            if cursor[vertex] < len(options):
                edge = options[cursor[vertex]]
                used[edge] = True
                a, b = edges[edge]
                stack.append((b if a == vertex else a, edge))
            else:
                stack.pop()
                if via is not None:
                    circuit.append(via)
        for position, edge in enumerate(circuit):
            colour[edge] = position % 2 == 1
    return {(edges[e][0][1], edges[e][1][1]): colour[e] for e in range(real)}


def shuffled(conditions: Sequence[str], rng: random.Random) -> list[str]:
    """Return a MUSHRA trial's conditions in a fresh random order (one rater, one trial)."""
    order = list(conditions)
    rng.shuffle(order)
    return order


# --- What raters see and answer ---------------------------------------------------------------------

CCR_CHOICES = (
    (3, "Much better"),
    (2, "Better"),
    (1, "Slightly better"),
    (0, "About the same"),
    (-1, "Slightly worse"),
    (-2, "Worse"),
    (-3, "Much worse"),
)  # P.808 Annex E's CCR scale: the second sample compared with the first
AB_CHOICES = ((-1, "A"), (0, "No preference"), (1, "B"))
DCR_CHOICES = (
    (5, "Degradation is inaudible"),
    (4, "Audible but not annoying"),
    (3, "Slightly annoying"),
    (2, "Annoying"),
    (1, "Very annoying"),
)  # P.800 Annex D's degradation category scale: B (the system) against A (the reference)
PAIR_CHOICES = {"ccr": CCR_CHOICES, "dcr": DCR_CHOICES, "ab": AB_CHOICES}
MUSHRA_LOWEST, MUSHRA_HIGHEST = 0, 100
# BS.1534-3's continuous quality scale: its five intervals' labels, bottom up.
MUSHRA_BANDS = ("Bad", "Poor", "Fair", "Good", "Excellent")


def slot_label(pairs: bool, position: int) -> str:
    """Return what the rater sees a slot called: "A" and "B" in a pair; in MUSHRA "Reference" (place
    0) and "Sample 1".. for the conditions. Labels name places, never systems."""
    if pairs:
        return "AB"[position - 1]
    return "Reference" if position == 0 else f"Sample {position}"


def answer_refusal(kind: str, positions: Sequence[int], answers: Mapping[int, int]) -> str | None:
    """Return why the answers do not fit the trial, None when they do.

    `positions` are the trial's places (0 is MUSHRA's open reference, never scored); `answers`
    place -> value. A pair is answered once, on its second place: CCR -3..+3, DCR 1-5, A/B -1/0/+1.
    MUSHRA scores every condition 0-100.
    """
    if kind in PAIR_CHOICES:
        allowed = {value for value, _ in PAIR_CHOICES[kind]}
        if set(answers) != {2} or answers[2] not in allowed:
            return {
                "ab": "Choose one answer.",
                "ccr": "Choose how B compares with A, from -3 to +3.",
                "dcr": "Choose how degraded B is against A, from 1 to 5.",
            }[kind]
        return None
    scored = {position for position in positions if position > 0}
    if set(answers) != scored or any(
        not MUSHRA_LOWEST <= value <= MUSHRA_HIGHEST for value in answers.values()
    ):
        return "Score every sample from 0 to 100."
    return None
