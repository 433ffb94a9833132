"""The design of a human listening study: rating dimensions, item sampling and who rates what, when.

Pure functions over plain keys (strings), so the design rules can be checked without a database:

- items are sampled at random, stratified by scenario (proportional allocation, largest remainder);
- every rated output gets its ratings from `ratings_per_output` different evaluators, and
  evaluators' loads differ by at most one rating;
- each evaluator sees the training set first, then their rated outputs mixed with the gold and
  trapping items (P.808's quality-control stimuli) in an order randomised per evaluator, in which
  the same item never appears twice in a row (so two systems' answers to one query are never
  compared back to back, which would turn absolute ratings into a pairwise comparison).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Modality = Literal["content", "audio"]
StimulusKind = Literal["rated", "gold", "trap", "training"]

SCORES = (1, 2, 3, 4, 5)
DEFAULT_RATINGS_PER_OUTPUT = 3
# How often the planner reshuffles when an evaluator's share cannot be ordered without repeats.
_PLAN_ATTEMPTS = 50


class StudyDesignError(ValueError):
    """The study cannot be built as asked; the message tells the admin what to change."""


@dataclass(frozen=True)
class Dimension:
    key: str
    label: str
    modality: Modality
    question: str
    anchors: tuple[str, str, str, str, str]  # the labels of scores 1..5

    def anchor_for(self, score: int) -> str:
        """Return the label of a score (1-5)."""
        return self.anchors[score - 1]


CONTENT_HELPFULNESS = "content_helpfulness"
NATURALNESS = "naturalness"
PROSODY = "prosody"
EMOTIONAL_ALIGNMENT = "emotional_alignment"

# Audio anchors follow the ACR wording (Excellent .. Bad) of ITU-T P.800/P.808, with a line that
# tells the rater what each level sounds like for this dimension.
DIMENSIONS: dict[str, Dimension] = {
    CONTENT_HELPFULNESS: Dimension(
        CONTENT_HELPFULNESS,
        "Helpfulness",
        "content",
        "How well does the response improve the user's experience and address their needs?",
        (
            "Bad: harmful or useless; ignores or worsens the user's situation",
            "Poor: generic; misses what the user needs",
            "Fair: partly addresses the user's need",
            "Good: addresses the need with care",
            "Excellent: clearly helps; meets the user's need and feelings",
        ),
    ),
    NATURALNESS: Dimension(
        NATURALNESS,
        "Naturalness",
        "audio",
        "How natural does the response voice sound?",
        (
            "Bad: clearly synthetic, unpleasant to listen to",
            "Poor: often unnatural or distorted",
            "Fair: noticeably synthetic but acceptable",
            "Good: mostly natural, minor artefacts",
            "Excellent: indistinguishable from a natural human voice",
        ),
    ),
    PROSODY: Dimension(
        PROSODY,
        "Prosody",
        "audio",
        "How appropriate are the rhythm, stress and intonation of the response?",
        (
            "Bad: monotone or wrong stress and pacing throughout",
            "Poor: often odd intonation or pacing",
            "Fair: acceptable, with some odd phrasing",
            "Good: natural intonation with minor lapses",
            "Excellent: rhythm, stress and intonation fit the words",
        ),
    ),
    EMOTIONAL_ALIGNMENT: Dimension(
        EMOTIONAL_ALIGNMENT,
        "Emotional alignment",
        "audio",
        "How well does the emotion of the response voice fit the user's state in the query?",
        (
            "Bad: the voice's emotion clashes with the user's state",
            "Poor: mostly mismatched emotion",
            "Fair: neutral; neither fits nor clashes",
            "Good: the tone fits the user's state",
            "Excellent: tone, warmth and energy fit the user's state exactly",
        ),
    ),
}


def dimensions_for(keys: Sequence[str]) -> list[Dimension]:
    """Return the dimensions named by keys, in catalogue order; unknown keys are an error."""
    unknown = [key for key in keys if key not in DIMENSIONS]
    if unknown:
        raise StudyDesignError(f"unknown rating dimensions: {', '.join(unknown)}")
    return [dimension for key, dimension in DIMENSIONS.items() if key in keys]


def trap_sentence(score: int) -> str:
    """Return what a trapping item's audio says: the score the rater must choose."""
    return f"This is an attention check. Please select score {score}."


# --- Sampling -----------------------------------------------------------------------------------


def allocate_stratified(available: Mapping[str, int], total: int) -> dict[str, int]:
    """Return how many items to draw per stratum: proportional to its size, by largest remainder.

    Each stratum first gets floor(total * size / all); the items left over go one each to the
    strata with the largest fractional parts (ties broken by stratum name, for reproducibility).
    No stratum is asked for more than it holds, because its exact share never exceeds its size.
    """
    pool = sum(available.values())
    if total < 0:
        raise StudyDesignError("the number of items must not be negative")
    if total > pool:
        raise StudyDesignError(f"{total} items were asked for but only {pool} are eligible")
    if total == 0:
        return dict.fromkeys(available, 0)
    shares = {stratum: total * size / pool for stratum, size in available.items()}
    counts = {stratum: int(share) for stratum, share in shares.items()}
    left = total - sum(counts.values())
    by_remainder = sorted(shares, key=lambda stratum: (-(shares[stratum] - counts[stratum]), stratum))
    for stratum in by_remainder[:left]:
        counts[stratum] += 1
    return counts


def sample_stratified(strata: Mapping[str, Sequence[str]], total: int, rng: random.Random) -> list[str]:
    """Return `total` keys drawn without replacement, stratum sizes from `allocate_stratified`."""
    counts = allocate_stratified({stratum: len(keys) for stratum, keys in strata.items()}, total)
    chosen: list[str] = []
    for stratum in sorted(strata):
        chosen.extend(rng.sample(sorted(strata[stratum]), counts[stratum]))
    return chosen


# --- Assignment ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stimulus:
    key: str  # the study's own id of what is played
    item: str  # the query it answers: two stimuli of one item are never shown back to back
    kind: StimulusKind


def distribute_ratings(
    outputs: Sequence[str], evaluators: Sequence[str], ratings_per_output: int, rng: random.Random
) -> dict[str, list[str]]:
    """Return evaluator -> outputs they rate: each output by k different evaluators, loads even.

    Outputs and evaluators are shuffled, then rating slot s (output s // k, its (s % k)-th
    rating) goes to evaluator s mod n. An output's k slots are k consecutive residues, hence k
    different evaluators when k <= n; and the N*k slots dealt round-robin give every evaluator
    floor(N*k/n) or ceil(N*k/n) of them.
    """
    if ratings_per_output < 1:
        raise StudyDesignError("each output needs at least one rating")
    if ratings_per_output > len(evaluators):
        raise StudyDesignError(
            f"{ratings_per_output} ratings per output need at least {ratings_per_output} evaluators; "
            f"{len(evaluators)} invited"
        )
    shuffled_outputs = list(outputs)
    rng.shuffle(shuffled_outputs)
    shuffled_evaluators = list(evaluators)
    rng.shuffle(shuffled_evaluators)
    shares: dict[str, list[str]] = {evaluator: [] for evaluator in evaluators}
    for index, output in enumerate(shuffled_outputs):
        for rating in range(ratings_per_output):
            slot = index * ratings_per_output + rating
            shares[shuffled_evaluators[slot % len(evaluators)]].append(output)
    return shares


def can_order(counts: Mapping[str, int], not_first: str | None = None) -> bool:
    """Return True when stimuli with these per-item counts can be lined up with no item twice in a row.

    With m stimuli, that is possible iff no item has more than ceil(m / 2) of them; when the line
    must not start with `not_first` and m is odd, that item must also hold fewer than
    (m + 1) / 2, since holding exactly that many forces it into every odd place, the first included.
    """
    m = sum(counts.values())
    if m == 0:
        return True
    half = (m + 1) // 2
    if max(counts.values()) > half:
        return False
    return not (not_first is not None and m % 2 == 1 and counts.get(not_first, 0) == half)


def order_without_repeats(
    stimuli: Sequence[Stimulus], rng: random.Random, previous_item: str | None = None
) -> list[Stimulus] | None:
    """Return the stimuli in random order with no item twice in a row, or None if impossible.

    Each step draws uniformly among the remaining stimuli whose item differs from the last one
    and leaves a remainder that `can_order` accepts, so it never paints itself into a corner.
    `previous_item` is the item shown just before this block (the end of the training set).

    With m stimuli left, placing one of item x leaves m - 1 whose bound is ceil((m - 1) / 2) =
    m // 2: an item holding more than m // 2 must go now, and when m - 1 is odd, x itself may not
    keep exactly m // 2. While m // 2 is at least the largest count at the start, neither can
    happen, so until the last few steps any stimulus of another item than the last will do.
    """
    counts = Counter(stimulus.item for stimulus in stimuli)
    if not can_order(counts, previous_item):
        return None
    most = max(counts.values(), default=0)
    remaining = list(stimuli)
    ordered: list[Stimulus] = []
    last = previous_item
    while remaining and len(remaining) // 2 >= most:
        index = rng.randrange(len(remaining))
        if remaining[index].item == last:
            continue  # at most half the remainder is of the last item: a redraw soon succeeds
        remaining[index], remaining[-1] = remaining[-1], remaining[index]
        choice = remaining.pop()
        counts[choice.item] -= 1
        ordered.append(choice)
        last = choice.item
    pools: dict[str, list[Stimulus]] = {}
    for stimulus in remaining:
        pools.setdefault(stimulus.item, []).append(stimulus)
    for left in range(len(remaining), 0, -1):
        bound = left // 2
        crowded = [item for item, count in counts.items() if count > bound]
        candidates = crowded or [item for item, count in counts.items() if count]
        allowed = [
            item for item in candidates if item != last and not (left % 2 == 0 and counts[item] - 1 == bound)
        ]
        # The item in proportion to its count, then one of its stimuli: a uniform draw over stimuli.
        item = rng.choices(allowed, weights=[counts[item] for item in allowed])[0]
        pool = pools[item]
        ordered.append(pool.pop(rng.randrange(len(pool))))
        counts[item] -= 1
        last = item
    return ordered


def plan_study(
    rated: Sequence[Stimulus],
    evaluators: Sequence[str],
    ratings_per_output: int = DEFAULT_RATINGS_PER_OUTPUT,
    *,
    quality_checks: Sequence[Stimulus] = (),
    training: Sequence[Stimulus] = (),
    seed: int = 0,
) -> dict[str, list[Stimulus]]:
    """Return each evaluator's presentation order.

    Training stimuli come first (everyone gets all of them, shuffled), then the evaluator's share of
    the rated stimuli mixed with every quality check (gold and trapping items), shuffled with no
    item twice in a row, including across the boundary after training.
    """
    if not evaluators:
        raise StudyDesignError("invite at least one evaluator")
    if len(set(evaluators)) != len(evaluators):
        raise StudyDesignError("an evaluator is listed twice")
    keys = [stimulus.key for stimulus in (*rated, *quality_checks, *training)]
    if len(set(keys)) != len(keys):
        raise StudyDesignError("a stimulus is listed twice")
    rng = random.Random(seed)
    by_key = {stimulus.key: stimulus for stimulus in rated}
    for _ in range(_PLAN_ATTEMPTS):
        shares = distribute_ratings(list(by_key), evaluators, ratings_per_output, rng)
        plan: dict[str, list[Stimulus]] = {}
        for evaluator in evaluators:
            warm_up = order_without_repeats(training, rng) or rng.sample(list(training), len(training))
            main = order_without_repeats(
                [*(by_key[key] for key in shares[evaluator]), *quality_checks],
                rng,
                previous_item=warm_up[-1].item if warm_up else None,
            )
            if main is None:
                break
            plan[evaluator] = [*warm_up, *main]
        else:
            return plan
    raise StudyDesignError(
        "some evaluator would get the same item twice in a row whatever the order: "
        "sample more items or invite more evaluators"
    )


# --- Dialogue studies -----------------------------------------------------------------------------


def sample_dialogues(
    strata: Mapping[str, Sequence[str]],
    systems: Sequence[str],
    per_system: int,
    rng: random.Random,
    *,
    same_for_all: bool = True,
) -> dict[str, list[str]]:
    """Return system -> the dialogues it is rated on, `per_system` each, stratified by `strata` (topic).

    `strata` holds the dialogues every chosen system answered on every turn. With `same_for_all`,
    one stratified sample of `per_system` dialogues serves every system, so systems are compared
    on the same conversations. Otherwise the study covers more of the pool for the same rating
    budget: min(pool, systems x per_system) dialogues are drawn (stratified), lined up so that
    strata interleave evenly (each dialogue at (rank in its stratum + 1/2) / stratum size, ranks
    shuffled), and system j takes the `per_system` consecutive dialogues from place j x per_system
    (wrapping round). A system's dialogues are then distinct (per_system <= line length), every
    dialogue serves floor or ceil(systems x per_system / line length) systems, and each window of
    the line holds each stratum about in proportion to its size.
    """
    if per_system < 1:
        raise StudyDesignError("sample at least one dialogue per system")
    if len(set(systems)) != len(systems) or not systems:
        raise StudyDesignError("choose at least one system, each once")
    pool = sum(len(keys) for keys in strata.values())
    if per_system > pool:
        raise StudyDesignError(
            f"{per_system} dialogues per system were asked for, but only {pool} dialogues have "
            "a usable answer from every chosen system on every turn"
        )
    if same_for_all:
        chosen = sample_stratified(strata, per_system, rng)
        return {system: list(chosen) for system in systems}
    drawn = sample_stratified(strata, min(pool, len(systems) * per_system), rng)
    by_stratum: dict[str, list[str]] = {}
    stratum_of = {key: stratum for stratum, keys in strata.items() for key in keys}
    for key in drawn:
        by_stratum.setdefault(stratum_of[key], []).append(key)
    placed: list[tuple[float, str, str]] = []
    for stratum, keys in sorted(by_stratum.items()):
        rng.shuffle(keys)
        placed += [((rank + 0.5) / len(keys), stratum, key) for rank, key in enumerate(keys)]
    line = [key for _, _, key in sorted(placed)]
    return {
        system: [line[(index * per_system + offset) % len(line)] for offset in range(per_system)]
        for index, system in enumerate(systems)
    }
