"""What a listening study's ratings say: the per-system, per-dimension figures (screening: `screening`).

Pure functions over plain rating rows, so the figures can be checked on a hand-made set. The
arithmetic lives in `webapp.lib.ratings`; this module decides which ratings each figure rests on:

- only "rated" stimuli count towards MOS, comparisons and agreement; gold and trapping items only
  screen raters, training ratings count for nothing;
- raters the admin excluded are left out of every figure but still appear in the screening;
- a MOS carries n of N, the outputs rated on its dimension of the system's rated outputs in the
  study, and is ranked only when every one of them was rated (`webapp.lib.coverage`): a system
  whose raters have not reached all its outputs is shown, flagged not comparable, never ranked.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

import numpy as np

from evaluation.studies.screening import RatingRow
from webapp.lib.coverage import Coverage, comparable
from webapp.lib.ratings import PairedTest, bootstrap_mos_ci, mos_with_ci, pairwise_wilcoxon_holm
from webapp.lib.spreadsheet import NeutralDictWriter
from webapp.lib.stats import krippendorff_alpha

BOOTSTRAP_REPLICATES = 2000


@dataclass(frozen=True)
class MosCell:
    system: str
    dimension: str
    n_outputs: int
    n_ratings: int
    mean: float | None  # None without ratings
    low: float | None  # t interval over per-output means; None with fewer than two outputs
    high: float | None
    bootstrap_low: float | None  # percentile bootstrap resampling raters and items
    bootstrap_high: float | None
    rank: int | None = None  # 1 = best comparable system on this dimension
    n_expected: int = 0  # N: the system's rated outputs in the study

    @property
    def coverage(self) -> Coverage:
        """Return n of N: the outputs rated on this dimension, of the system's outputs in the study."""
        return Coverage(self.n_outputs, self.n_expected)

    @property
    def comparable(self) -> bool:
        """Return whether every expected output was rated, so the MOS may be ranked."""
        return comparable(self.n_outputs, self.n_expected)


@dataclass(frozen=True)
class TurnCell:
    """The MOS of one system on one dimension at one assistant turn (dialogue studies)."""

    system: str
    dimension: str
    turn: int
    n_outputs: int  # dialogues rated at this turn
    n_ratings: int
    mean: float | None  # None without ratings
    low: float | None  # t interval over per-dialogue means; None with fewer than two dialogues
    high: float | None
    n_expected: int = 0  # N: the system's rated dialogues that have this turn

    @property
    def coverage(self) -> Coverage:
        """Return n of N: the dialogues rated at this turn, of those expected."""
        return Coverage(self.n_outputs, self.n_expected)


@dataclass(frozen=True)
class Comparison:
    dimension: str
    test: PairedTest


@dataclass(frozen=True)
class Agreement:
    dimension: str
    alpha: float | None  # None when undefined (fewer than two distinct scores on shared outputs)
    n_outputs: int  # outputs rated by two or more raters
    n_ratings: int  # the ratings of those outputs


@dataclass(frozen=True)
class StudySummary:
    systems: tuple[str, ...]
    dimensions: tuple[str, ...]
    cells: Mapping[tuple[str, str], MosCell]
    comparisons: tuple[Comparison, ...]
    agreement: tuple[Agreement, ...]
    raters_included: tuple[str, ...]
    raters_excluded: tuple[str, ...]
    n_ratings: int
    notes: tuple[str, ...] = field(default=())
    turns: tuple[int, ...] = field(default=())  # dialogue studies: the turn numbers rated
    by_turn: Mapping[tuple[str, str, int], TurnCell] = field(default_factory=dict)

    def cell(self, system: str, dimension: str) -> MosCell:
        """Return the MOS cell of one system on one dimension."""
        return self.cells[(system, dimension)]

    def turn_cell(self, system: str, dimension: str, turn: int) -> TurnCell:
        """Return the MOS of one system on one dimension at one turn of the dialogues."""
        return self.by_turn[(system, dimension, turn)]


def summarise_ratings(
    rows: Sequence[RatingRow],
    systems: Sequence[str],
    dimensions: Sequence[str],
    excluded_raters: Iterable[str] = (),
    n_boot: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    per_turn: bool = False,
    expected_outputs: Mapping[str, int] | None = None,
    expected_turns: Mapping[tuple[str, int], int] | None = None,
) -> StudySummary:
    """Return MOS with confidence intervals, Holm-corrected pairwise tests and agreement per dimension.

    The t interval is taken over per-output means, so three ratings of one output count once and
    the interval is not made narrower by their dependence; the bootstrap resamples raters and items
    together, which also carries rater leniency. Pairwise Wilcoxon tests compare systems on the
    items both answered (each item's score the mean of its ratings); Holm's correction runs over the
    pairs of one dimension. Krippendorff's alpha (ordinal) treats each output as a unit.

    In a dialogue study each rated turn is an output (rows name the turn in `stimulus` and `item`),
    and `per_turn` adds the MOS by turn number (`mos_by_turn`).

    `expected_outputs` is each system's number of rated outputs in the study, N of its MOS cells
    (default: the outputs any kept rating of the system names, on any dimension); `expected_turns`,
    per (system, turn), its rated dialogues with that turn, N of the MOS by turn.
    """
    excluded = set(excluded_raters)
    kept = [row for row in rows if row.kind == "rated" and row.rater not in excluded]
    # One pass groups the kept rows by dimension and system (not one scan of them per cell).
    grouped: dict[str, dict[str, list[RatingRow]]] = defaultdict(lambda: defaultdict(list))
    for row in kept:
        grouped[row.dimension][row.system].append(row)
    if expected_outputs is None:
        outputs_of: dict[str, set[str]] = defaultdict(set)
        for row in kept:
            outputs_of[row.system].add(row.stimulus)
        expected_outputs = {system: len(outputs_of[system]) for system in systems}
    notes: list[str] = []
    cells: dict[tuple[str, str], MosCell] = {}
    comparisons: list[Comparison] = []
    agreement: list[Agreement] = []
    for dimension in dimensions:
        by_system = grouped.get(dimension, {})
        on_dimension = [row for own in by_system.values() for row in own]
        per_item_means: dict[str, dict[str, float]] = {}
        for system in systems:
            own = by_system.get(system, [])
            cells[(system, dimension)] = replace(
                _mos_cell(system, dimension, own, n_boot, seed), n_expected=expected_outputs.get(system, 0)
            )
            by_item: dict[str, list[int]] = defaultdict(list)
            for row in own:
                by_item[row.item].append(row.score)
            per_item_means[system] = {item: sum(scores) / len(scores) for item, scores in by_item.items()}
        _rank(cells, systems, dimension)
        testable = {system: means for system, means in per_item_means.items() if means}
        if len(testable) >= 2:
            comparisons.extend(_compare(dimension, testable, notes))
        agreement.append(_agreement(dimension, on_dimension))
    return StudySummary(
        systems=tuple(systems),
        dimensions=tuple(dimensions),
        cells=cells,
        comparisons=tuple(comparisons),
        agreement=tuple(agreement),
        raters_included=tuple(sorted({row.rater for row in kept})),
        raters_excluded=tuple(sorted(excluded & {row.rater for row in rows})),
        n_ratings=len(kept),
        notes=tuple(notes),
        turns=tuple(sorted({row.turn for row in kept})) if per_turn else (),
        by_turn=mos_by_turn(kept, systems, dimensions, expected_turns) if per_turn else {},
    )


def mos_by_turn(
    rows: Sequence[RatingRow],
    systems: Sequence[str],
    dimensions: Sequence[str],
    expected: Mapping[tuple[str, int], int] | None = None,
) -> dict[tuple[str, str, int], TurnCell]:
    """Return (system, dimension, turn) -> MOS with a t interval, for every turn number rated.

    Rows are the kept ratings of rated stimuli. As for the whole-study MOS, a turn's ratings by
    several raters are averaged first and the interval is taken over those per-dialogue means.
    `expected` is N per (system, turn) (default: the dialogues any row of the system names at it).
    """
    if expected is None:
        seen: dict[tuple[str, int], set[str]] = defaultdict(set)
        for row in rows:
            seen[(row.system, row.turn)].add(row.stimulus)
        expected = {key: len(stimuli) for key, stimuli in seen.items()}
    grouped: dict[tuple[str, str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        grouped[(row.system, row.dimension, row.turn)][row.stimulus].append(float(row.score))
    turns = sorted({row.turn for row in rows})
    cells: dict[tuple[str, str, int], TurnCell] = {}
    for system in systems:
        for dimension in dimensions:
            for turn in turns:
                by_output = grouped.get((system, dimension, turn), {})
                means = [float(np.mean(scores)) for scores in by_output.values()]
                mean = float(np.mean(means)) if means else None
                low = high = None
                if len(means) >= 2:
                    interval = mos_with_ci(by_output)
                    low, high = interval.low, interval.high
                cells[(system, dimension, turn)] = TurnCell(
                    system=system,
                    dimension=dimension,
                    turn=turn,
                    n_outputs=len(by_output),
                    n_ratings=sum(len(scores) for scores in by_output.values()),
                    mean=mean,
                    low=low,
                    high=high,
                    n_expected=expected.get((system, turn), 0),
                )
    return cells


def _mos_cell(system: str, dimension: str, rows: Sequence[RatingRow], n_boot: int, seed: int) -> MosCell:
    by_output: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        by_output[row.stimulus].append(float(row.score))
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    boot_low: float | None = None
    boot_high: float | None = None
    if rows:
        if len(by_output) < 2:  # else the t interval below gives the mean over outputs
            mean = float(np.mean([sum(scores) / len(scores) for scores in by_output.values()]))
        boot = bootstrap_mos_ci(
            [(row.rater, row.stimulus, float(row.score)) for row in rows], n_boot=n_boot, seed=seed
        )
        boot_low, boot_high = boot.low, boot.high
    if len(by_output) >= 2:
        interval = mos_with_ci(by_output)
        mean, low, high = interval.mean, interval.low, interval.high
    return MosCell(
        system=system,
        dimension=dimension,
        n_outputs=len(by_output),
        n_ratings=len(rows),
        mean=mean,
        low=low,
        high=high,
        bootstrap_low=boot_low,
        bootstrap_high=boot_high,
    )


def _rank(cells: dict[tuple[str, str], MosCell], systems: Sequence[str], dimension: str) -> None:
    """Rank the comparable MOS of one dimension (every expected output rated), best first."""
    scored = sorted(
        (
            cell
            for system in systems
            if (cell := cells[(system, dimension)]).mean is not None and cell.comparable
        ),
        key=lambda cell: -(cell.mean or 0.0),
    )
    for position, cell in enumerate(scored, start=1):
        cells[(cell.system, dimension)] = replace(cell, rank=position)


def _compare(
    dimension: str, per_item_means: Mapping[str, Mapping[str, float]], notes: list[str]
) -> list[Comparison]:
    pairs = {
        (a, b): [item for item in per_item_means[a] if item in per_item_means[b]]
        for a, b in combinations(per_item_means, 2)
    }
    unmatched = [pair for pair, shared in pairs.items() if not shared]
    if unmatched:
        notes.append(
            f"{dimension}: no pairwise tests, "
            + ", ".join(f"{a} and {b}" for a, b in unmatched)
            + " share no rated item"
        )
        return []
    return [Comparison(dimension, test) for test in pairwise_wilcoxon_holm(per_item_means)]


def _agreement(dimension: str, rows: Sequence[RatingRow]) -> Agreement:
    by_output: dict[str, dict[str, int]] = defaultdict(dict)
    for row in rows:
        by_output[row.stimulus][row.rater] = row.score
    # Each unit lists only its raters' scores (in rater order): alpha reads nothing but the
    # pairable values of a unit, so the empty cells of a units x raters table need not be built.
    units = [[scores[rater] for rater in sorted(scores)] for scores in by_output.values() if len(scores) >= 2]
    n_ratings = sum(len(unit) for unit in units)
    try:
        alpha: float | None = krippendorff_alpha(units, level="ordinal")
    except ValueError:
        alpha = None
    return Agreement(dimension=dimension, alpha=alpha, n_outputs=len(units), n_ratings=n_ratings)


# --- Objective metrics against human MOS ------------------------------------------------------

# Fewer rated outputs than this with both a measure and a MOS: no coefficient is shown. Below
# about ten pairs Spearman's rho swings by more than 0.5 when one output moves.
MIN_CORRELATION_PAIRS = 10


@dataclass(frozen=True)
class ObjectiveCorrelation:
    """Spearman's rho between one objective measure of the outputs' audio and their human MOS on
    one dimension, over the rated outputs that have both."""

    metric: str
    dimension: str
    n: int
    rho: float | None  # None when `note` says why there is none
    p_value: float | None
    note: str = ""


def objective_correlations(
    rows: Sequence[RatingRow],
    measures: Mapping[str, Mapping[str, float | None]],
    dimensions: Sequence[str],
    metrics: Sequence[str],
    excluded_raters: Iterable[str] = (),
) -> list[ObjectiveCorrelation]:
    """Return, per dimension and measure, Spearman's rho (scipy.stats.spearmanr) of the measure with
    each rated output's MOS (the mean of its kept ratings), with n, or a note when n is too small.

    `measures` maps a stimulus as rating rows name it to its output's measures (metric -> value)."""
    from scipy import stats as scipy_stats  # heavy: loaded by the analysis, not the web app

    excluded = set(excluded_raters)
    kept = [row for row in rows if row.kind == "rated" and row.rater not in excluded]
    correlations: list[ObjectiveCorrelation] = []
    for dimension in dimensions:
        by_output: dict[str, list[int]] = defaultdict(list)
        for row in kept:
            if row.dimension == dimension:
                by_output[row.stimulus].append(row.score)
        for metric in metrics:
            pairs = [
                (float(value), float(np.mean(scores)))
                for stimulus, scores in by_output.items()
                if (value := measures.get(stimulus, {}).get(metric)) is not None
            ]
            n = len(pairs)
            if n < MIN_CORRELATION_PAIRS:
                note = (
                    f"n = {n}: too few outputs with both for a correlation (at least {MIN_CORRELATION_PAIRS})"
                )
                correlations.append(ObjectiveCorrelation(metric, dimension, n, None, None, note))
                continue
            xs, ys = zip(*pairs, strict=True)
            if len(set(xs)) < 2 or len(set(ys)) < 2:
                note = "every output has the same value: rho is undefined"
                correlations.append(ObjectiveCorrelation(metric, dimension, n, None, None, note))
                continue
            result = scipy_stats.spearmanr(xs, ys)
            correlations.append(
                ObjectiveCorrelation(metric, dimension, n, float(result.statistic), float(result.pvalue))
            )
    return correlations


# --- Export -------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "figure",
    "dimension",
    "system",
    "other_system",
    "estimate",
    "ci_low",
    "ci_high",
    "bootstrap_low",
    "bootstrap_high",
    "n_outputs",
    "n_expected",
    "n_ratings",
    "n_items",
    "statistic",
    "p_value",
    "p_holm",
    "turn",
)


def summary_csv(summary: StudySummary) -> str:
    """Return every figure of the summary as CSV: one row per MOS cell, comparison and agreement."""
    buffer = io.StringIO()
    writer = NeutralDictWriter(buffer, fieldnames=CSV_COLUMNS, restval="")
    writer.writeheader()
    for system in summary.systems:
        for dimension in summary.dimensions:
            cell = summary.cell(system, dimension)
            writer.writerow(
                {
                    "figure": "mos",
                    "dimension": dimension,
                    "system": system,
                    "estimate": _number(cell.mean),
                    "ci_low": _number(cell.low),
                    "ci_high": _number(cell.high),
                    "bootstrap_low": _number(cell.bootstrap_low),
                    "bootstrap_high": _number(cell.bootstrap_high),
                    "n_outputs": cell.n_outputs,
                    "n_expected": cell.n_expected,
                    "n_ratings": cell.n_ratings,
                }
            )
    for system, dimension, turn in (
        (system, dimension, turn)
        for system in summary.systems
        for dimension in summary.dimensions
        for turn in summary.turns
    ):
        turn_cell = summary.turn_cell(system, dimension, turn)
        writer.writerow(
            {
                "figure": "mos_by_turn",
                "dimension": dimension,
                "system": system,
                "turn": turn,
                "estimate": _number(turn_cell.mean),
                "ci_low": _number(turn_cell.low),
                "ci_high": _number(turn_cell.high),
                "n_outputs": turn_cell.n_outputs,
                "n_expected": turn_cell.n_expected,
                "n_ratings": turn_cell.n_ratings,
            }
        )
    for comparison in summary.comparisons:
        test = comparison.test
        writer.writerow(
            {
                "figure": "wilcoxon",
                "dimension": comparison.dimension,
                "system": test.system_a,
                "other_system": test.system_b,
                "estimate": _number(test.mean_difference),
                "n_items": test.n_items,
                "statistic": _number(test.statistic),
                "p_value": _number(test.p_value),
                "p_holm": _number(test.p_holm),
            }
        )
    for agreement in summary.agreement:
        writer.writerow(
            {
                "figure": "krippendorff_alpha_ordinal",
                "dimension": agreement.dimension,
                "estimate": _number(agreement.alpha),
                "n_outputs": agreement.n_outputs,
                "n_ratings": agreement.n_ratings,
            }
        )
    return buffer.getvalue()


def _number(value: float | None) -> str:
    if value is None or math.isnan(value):
        return ""
    return f"{value:.4f}"
