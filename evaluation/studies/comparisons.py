"""What comparison studies' answers say: CMOS, Bradley–Terry, MUSHRA, post-screening, time on task.

Pure functions over plain rows (no Django), so every figure can be checked against a reference
computation (the tests: scipy's t interval, a direct maximum-likelihood fit with scipy.optimize,
hand-built MUSHRA panels). The rows name systems by name, as admins read them.

- CCR / CMOS (ITU-T P.808 Annex E): a vote says how the second sample heard compares with the
  first, -3..+3. Presentation order is counterbalanced, so a vote is sign-corrected before it is
  averaged: the CMOS of B against A counts +v when B was heard second and -v when it was first.
- A/B preference: a vote is -1 (the first preferred), 0 (no preference) or +1 (the second).
  Bradley–Terry strengths are fitted by maximum likelihood with ties counted as half a win to each
  side (the "ties as half wins" convention, not Davidson's tie parameter).
- MUSHRA (ITU-R BS.1534-3): 0-100 per condition per trial, a hidden reference and anchors among
  the conditions; raters who score the hidden reference below 90 in more than 15% of their trials
  (or, with a mid anchor, that anchor above 90 in more than 15%) are excluded (§4.1.2).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from webapp.lib.ratings import mos_with_ci

CONFIDENCE = 0.95
BOOTSTRAP_REPLICATES = 1000
CCR_SCALE = (-3, -2, -1, 0, 1, 2, 3)
AB_ANSWERS = (-1, 0, 1)
MUSHRA_RANGE = (0, 100)

# Condition names of a MUSHRA trial's conditions that are not systems (what admins read).
HIDDEN_REFERENCE = "Hidden reference"
LOW_ANCHOR = "Anchor 3.5 kHz"
MID_ANCHOR = "Anchor 7 kHz"

# BS.1534-3 §4.1.2 post-screening.
HIDDEN_REFERENCE_FLOOR = 90
MID_ANCHOR_CEILING = 90
MAX_SCREENED_SHARE = 0.15

# Bradley–Terry fitting: minorise-maximise iterations (Hunter 2004) until strengths move less.
_BT_TOLERANCE = 1e-10
_BT_MAX_ITERATIONS = 20_000
_BT_FLOOR = 1e-12  # a strength never reaches 0 (log-strength stays finite in degenerate replicates)


# --- Rows -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairVote:
    """One answer to a pair trial, as the rater gave it."""

    rater: str
    item: str  # the query both samples answer
    first: str  # the condition heard first ("A")
    second: str  # the condition heard second ("B")
    answer: int  # CCR: -3..+3, the second compared with the first; A/B: -1, 0 (tie), +1


@dataclass(frozen=True)
class MushraScore:
    rater: str
    trial: str  # one trial: every condition of one item, on one screen
    item: str
    condition: str  # a system's name, HIDDEN_REFERENCE, LOW_ANCHOR or MID_ANCHOR
    score: int  # 0-100


# --- CMOS -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CmosCell:
    """The CMOS of `system` against `versus`: positive when `system` was judged better."""

    system: str
    versus: str
    n_items: int
    n_votes: int
    mean: float | None  # None without votes
    low: float | None  # 95% t interval over per-item means; None with fewer than two items
    high: float | None


def oriented(vote: PairVote, system: str) -> int:
    """Return the vote as `system`'s advantage over the other sample, whichever was heard first."""
    if vote.second == system:
        return vote.answer
    if vote.first == system:
        return -vote.answer
    raise ValueError(f"{system} is not in this pair")


def comparison_mos(
    votes: Iterable[PairVote], systems: Sequence[str], reference: str | None = None
) -> list[CmosCell]:
    """Return CMOS cells: each system against the reference, or (without one) every pair of systems.

    Votes are sign-corrected for order (`oriented`), averaged per item, and the 95% t interval is
    taken over those per-item means, as the studies' MOS is (`webapp.lib.ratings.mos_with_ci`):
    several raters' votes on one pair of samples are not independent observations.
    """
    by_pair: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    order = {system: index for index, system in enumerate(systems)}
    for vote in votes:
        # The pair's system is the later of the two in `systems`, or the one that is not the reference.
        if reference is not None and reference in (vote.first, vote.second):
            versus = reference
            system = vote.second if vote.first == reference else vote.first
        else:
            a, b = sorted((vote.first, vote.second), key=lambda name: order.get(name, len(order)))
            versus, system = a, b
        by_pair[(system, versus)][vote.item].append(float(oriented(vote, system)))
    if reference is not None:
        pairs = [(system, reference) for system in systems if system != reference]
    else:
        pairs = [(b, a) for i, a in enumerate(systems) for b in systems[i + 1 :]]
    cells = []
    for system, versus in pairs:
        by_item = by_pair.get((system, versus), {})
        n_votes = sum(len(scores) for scores in by_item.values())
        mean = low = high = None
        if by_item:
            mean = float(np.mean([np.mean(scores) for scores in by_item.values()]))
        if len(by_item) >= 2:
            interval = mos_with_ci(by_item, CONFIDENCE)
            mean, low, high = interval.mean, interval.low, interval.high
        cells.append(CmosCell(system, versus, len(by_item), n_votes, mean, low, high))
    return cells


# --- Bradley–Terry ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BradleyTerryScore:
    system: str
    score: float | None  # log-strength, centred so the systems' scores sum to 0; None: not estimable
    low: float | None  # 95% percentile bootstrap interval, resampling raters
    high: float | None
    wins: float  # wins, ties counted half
    comparisons: int


@dataclass(frozen=True)
class Preference:
    systems: tuple[str, ...]
    scores: tuple[BradleyTerryScore, ...]
    # win_rate[a][b]: the share of a's comparisons with b that a won, ties half; None when never compared
    win_rate: Mapping[str, Mapping[str, float | None]]
    counts: Mapping[str, Mapping[str, int]]
    n_votes: int
    notes: tuple[str, ...] = field(default=())


def win_matrices(
    votes: Iterable[PairVote], systems: Sequence[str]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Return (raters, wins, games): per rater the k x k matrix of wins of row over column (ties
    half to each) and of comparisons; votes naming a condition outside `systems` are left out."""
    index = {system: i for i, system in enumerate(systems)}
    raters: dict[str, int] = {}
    rows: list[tuple[int, int, int, int]] = []
    for vote in votes:
        if vote.first not in index or vote.second not in index:
            continue
        rater = raters.setdefault(vote.rater, len(raters))
        rows.append((rater, index[vote.first], index[vote.second], vote.answer))
    k = len(systems)
    wins = np.zeros((len(raters), k, k))
    if rows:
        table = np.array(rows, dtype=np.int64)
        who, first, second, answer = table.T
        sign = np.sign(answer)
        np.add.at(wins, (who, second, first), (sign > 0) + 0.5 * (sign == 0))
        np.add.at(wins, (who, first, second), (sign < 0) + 0.5 * (sign == 0))
    games = wins + wins.transpose(0, 2, 1)
    return list(raters), wins, games


def fit_bradley_terry(wins: np.ndarray) -> np.ndarray:
    """Return maximum-likelihood log-strengths (centred to sum 0) for one or a batch of win matrices.

    `wins` is (k, k) or (B, k, k): wins[i, j] the (half-)wins of i over j. The likelihood is
    prod over pairs of p_i / (p_i + p_j) to the power wins[i, j]; the minorise-maximise update
    p_i <- W_i / sum_j n_ij / (p_i + p_j) (Hunter 2004) raises it at every step and converges to
    the maximum when one exists (every split of the systems has a win across it both ways).
    Strengths are floored at 1e-12 of the largest, so a system that never wins gets a very low,
    finite score rather than minus infinity.
    """
    batch = wins[None] if wins.ndim == 2 else wins
    games = batch + batch.transpose(0, 2, 1)
    total_wins = batch.sum(axis=2)
    strengths = np.ones(batch.shape[:2])
    for _ in range(_BT_MAX_ITERATIONS):
        pair_sums = strengths[:, :, None] + strengths[:, None, :]
        denominators = (games / pair_sums).sum(axis=2)
        updated = np.where(denominators > 0, total_wins / np.where(denominators > 0, denominators, 1), 0)
        updated = np.maximum(updated, _BT_FLOOR * updated.max(axis=1, keepdims=True))
        updated /= np.exp(np.log(updated).mean(axis=1, keepdims=True))
        moved = np.abs(np.log(updated) - np.log(strengths)).max()
        strengths = updated
        if moved < _BT_TOLERANCE:
            break
    scores = np.log(strengths)
    scores -= scores.mean(axis=1, keepdims=True)
    return scores[0] if wins.ndim == 2 else scores


def estimable(wins: np.ndarray) -> bool:
    """Return True when the maximum-likelihood strengths exist (Zermelo/Ford's condition): in the
    graph with an edge i -> j whenever i won (or tied) against j, every system reaches every other."""
    k = len(wins)
    beat = wins > 0
    for start in range(k):
        seen = {start}
        frontier = [start]
        while frontier:
            node = frontier.pop()
            for other in np.flatnonzero(beat[node]):
                if int(other) not in seen:
                    seen.add(int(other))
                    frontier.append(int(other))
        if len(seen) < k:
            return False
    return True


def bradley_terry(
    votes: Iterable[PairVote],
    systems: Sequence[str],
    n_boot: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Preference:
    """Return Bradley–Terry log-strengths with bootstrap intervals, and the win-rate matrix.

    The interval resamples raters with replacement (a rater's votes stay together, so a rater with
    a taste of their own widens it) and refits each replicate; the bounds are percentiles.
    """
    raters, per_rater, _ = win_matrices(votes, systems)
    wins = per_rater.sum(axis=0)
    games = wins + wins.T
    n_votes = round(float(games.sum()) / 2)
    notes: list[str] = []
    point: np.ndarray | None = None
    lows: list[float | None] = [None] * len(systems)
    highs: list[float | None] = [None] * len(systems)
    if n_votes and estimable(wins):
        point = fit_bradley_terry(wins)
        if n_boot and len(raters) > 1:
            rng = np.random.default_rng(seed)
            draws = rng.multinomial(len(raters), np.full(len(raters), 1.0 / len(raters)), size=n_boot)
            replicates = fit_bradley_terry(np.einsum("br,rij->bij", draws, per_rater))
            tail = (1.0 - confidence) / 2.0 * 100.0
            low, high = np.percentile(replicates, [tail, 100.0 - tail], axis=0)
            lows, highs = [float(value) for value in low], [float(value) for value in high]
    elif n_votes:
        notes.append(
            "Bradley–Terry scores are not estimable yet: some system never won (or never lost) "
            "against the others, so its strength would be infinite."
        )
    scores = tuple(
        BradleyTerryScore(
            system=system,
            score=None if point is None else float(point[i]),
            low=lows[i] if point is not None else None,
            high=highs[i] if point is not None else None,
            wins=float(wins[i].sum()),
            comparisons=int(games[i].sum()),
        )
        for i, system in enumerate(systems)
    )
    win_rate = {
        a: {b: (float(wins[i, j] / games[i, j]) if games[i, j] else None) for j, b in enumerate(systems)}
        for i, a in enumerate(systems)
    }
    counts = {a: {b: int(games[i, j]) for j, b in enumerate(systems)} for i, a in enumerate(systems)}
    return Preference(tuple(systems), scores, win_rate, counts, n_votes, tuple(notes))


# --- MUSHRA -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MushraScreen:
    rater: str
    trials: int
    hidden_reference_low: int  # trials with the hidden reference scored below 90
    mid_anchor_high: int  # trials with the mid anchor scored above 90
    reasons: tuple[str, ...]

    @property
    def excluded(self) -> bool:
        """Return True when the post-screening excludes the rater."""
        return bool(self.reasons)


def mushra_post_screening(
    scores: Iterable[MushraScore],
    floor: int = HIDDEN_REFERENCE_FLOOR,
    ceiling: int = MID_ANCHOR_CEILING,
    max_share: float = MAX_SCREENED_SHARE,
) -> list[MushraScreen]:
    """Return each rater's BS.1534-3 post-screening: excluded when they score the hidden reference
    below `floor` in more than `max_share` of their trials, or the mid anchor (where there is one)
    above `ceiling` in more than `max_share` of the trials that have it. "More than 15%" is strict:
    3 low trials of 20 (15%) keep a rater, 4 (20%) exclude them."""
    trials: dict[str, set[str]] = defaultdict(set)
    low: dict[str, set[str]] = defaultdict(set)
    mid_trials: dict[str, set[str]] = defaultdict(set)
    high: dict[str, set[str]] = defaultdict(set)
    for row in scores:
        trials[row.rater].add(row.trial)
        if row.condition == HIDDEN_REFERENCE and row.score < floor:
            low[row.rater].add(row.trial)
        if row.condition == MID_ANCHOR:
            mid_trials[row.rater].add(row.trial)
            if row.score > ceiling:
                high[row.rater].add(row.trial)
    screens = []
    for rater in sorted(trials):
        n, n_low, n_high = len(trials[rater]), len(low[rater]), len(high[rater])
        reasons = []
        if n_low > max_share * n:
            reasons.append(
                f"hidden reference below {floor} in {n_low} of {n} trials "
                f"({100 * n_low / n:.0f}% > {100 * max_share:.0f}%)"
            )
        n_mid = len(mid_trials[rater])
        if n_mid and n_high > max_share * n_mid:
            reasons.append(
                f"mid anchor above {ceiling} in {n_high} of {n_mid} trials "
                f"({100 * n_high / n_mid:.0f}% > {100 * max_share:.0f}%)"
            )
        screens.append(MushraScreen(rater, n, n_low, n_high, tuple(reasons)))
    return screens


@dataclass(frozen=True)
class BoxStats:
    """One condition's MUSHRA scores as a box plot (Tukey: whiskers reach the furthest score within
    1.5 IQR of the box) with the mean and its 95% t interval over per-item means."""

    condition: str
    n: int
    mean: float | None
    low: float | None
    high: float | None
    median: float | None
    q1: float | None
    q3: float | None
    whisker_low: float | None
    whisker_high: float | None
    outliers: int


def box_stats(condition: str, scores: Sequence[float], by_item: Mapping[str, Sequence[float]]) -> BoxStats:
    """Return the box plot figures of one condition's scores (quartiles by linear interpolation)."""
    if not scores:
        return BoxStats(condition, 0, None, None, None, None, None, None, None, None, 0)
    values = np.asarray(scores, dtype=float)
    q1, median, q3 = (float(value) for value in np.percentile(values, [25, 50, 75]))
    reach = 1.5 * (q3 - q1)
    inside = values[(values >= q1 - reach) & (values <= q3 + reach)]
    mean, low, high = float(values.mean()), None, None
    if len(by_item) >= 2:
        interval = mos_with_ci(by_item, CONFIDENCE)
        mean, low, high = interval.mean, interval.low, interval.high
    return BoxStats(
        condition=condition,
        n=len(values),
        mean=mean,
        low=low,
        high=high,
        median=median,
        q1=q1,
        q3=q3,
        whisker_low=float(inside.min()),
        whisker_high=float(inside.max()),
        outliers=int(len(values) - len(inside)),
    )


def mushra_summary(
    scores: Iterable[MushraScore], conditions: Sequence[str], excluded: Iterable[str] = ()
) -> list[BoxStats]:
    """Return each condition's box plot figures over the raters not excluded."""
    left_out = set(excluded)
    values: dict[str, list[float]] = defaultdict(list)
    by_item: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in scores:
        if row.rater in left_out:
            continue
        values[row.condition].append(float(row.score))
        by_item[row.condition][row.item].append(float(row.score))
    return [box_stats(condition, values[condition], by_item[condition]) for condition in conditions]


# --- Raters -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RaterTime:
    rater: str
    trials: int
    total_seconds: float
    median_seconds: float


def time_on_task(trial_seconds: Iterable[tuple[str, float]]) -> list[RaterTime]:
    """Return each rater's time on task from (rater, seconds from a trial's first showing to its
    answer) pairs: the total and the median per trial (the median is not moved by a rater who left
    a trial open over lunch)."""
    by_rater: dict[str, list[float]] = defaultdict(list)
    for rater, seconds in trial_seconds:
        by_rater[rater].append(max(0.0, seconds))
    return [
        RaterTime(rater, len(times), float(sum(times)), float(np.median(times)))
        for rater, times in sorted(by_rater.items())
    ]


@dataclass(frozen=True)
class ExcludedRater:
    rater: str
    reasons: tuple[str, ...]


def excluded_raters(
    decisions: Mapping[str, str], screening: Iterable[MushraScreen] = ()
) -> list[ExcludedRater]:
    """Return every rater left out of the figures with why: an admin's exclusion (rater -> their
    note, "" for none) and the MUSHRA post-screening."""
    reasons: dict[str, list[str]] = defaultdict(list)
    for rater, note in decisions.items():
        reasons[rater].append(f"excluded by an admin: {note}" if note else "excluded by an admin")
    for screen in screening:
        reasons[screen.rater].extend(screen.reasons)
    return [ExcludedRater(rater, tuple(why)) for rater, why in sorted(reasons.items()) if why]


def finite(value: float | None) -> float | None:
    """Return the value, or None for a missing or non-finite one (JSON and CSV cells)."""
    return None if value is None or not math.isfinite(value) else value
