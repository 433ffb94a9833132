"""Rater screening of a listening study: straightlining, agreement with the panel, gold and traps.

Pure functions over plain rating rows (the arithmetic is in `webapp.lib.ratings`): gold and
trapping items only screen raters; training ratings count for nothing.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluation.studies.design import DIMENSIONS, StimulusKind
from webapp.lib.ratings import LOW_CORRELATION, STRAIGHTLINING_VARIANCE, RaterScreen, screen_raters


@dataclass(frozen=True)
class RatingRow:
    rater: str
    stimulus: str
    kind: StimulusKind
    system: str  # "" for trapping items, which no system produced
    item: str
    dimension: str
    score: int
    turn: int = 1  # the assistant turn of a dialogue stimulus (then `stimulus` names the turn too)


# stimulus -> dimension -> (lowest, highest) acceptable score, for gold and trapping items
Expectations = Mapping[str, Mapping[str, tuple[int, int]]]


@dataclass(frozen=True)
class ScreeningRules:
    variance_threshold: float = STRAIGHTLINING_VARIANCE
    correlation_threshold: float = LOW_CORRELATION
    allowed_check_failures: int = 0


@dataclass(frozen=True)
class RaterReport:
    rater: str
    n_ratings: int  # ratings of rated stimuli, over all dimensions
    gold_checked: int
    gold_failed: int
    traps_checked: int
    traps_failed: int
    by_dimension: Mapping[str, RaterScreen]
    reasons: tuple[str, ...]

    @property
    def flagged(self) -> bool:
        """Return True when anything in the screening speaks against the rater."""
        return bool(self.reasons)


def failed_checks(rows: Iterable[RatingRow], expectations: Expectations) -> dict[tuple[str, str], bool]:
    """Return (rater, stimulus) -> failed for every gold or trapping stimulus a rater answered.

    A check fails when any expected dimension's score falls outside its range; dimensions the
    expectation does not mention are free.
    """
    failed: dict[tuple[str, str], bool] = {}
    for row in rows:
        if row.kind not in ("gold", "trap") or row.stimulus not in expectations:
            continue
        key = (row.rater, row.stimulus)
        bounds = expectations[row.stimulus].get(row.dimension)
        outside = bounds is not None and not bounds[0] <= row.score <= bounds[1]
        failed[key] = failed.get(key, False) or outside
    return failed


def screen_study_raters(
    rows: Sequence[RatingRow], expectations: Expectations, rules: ScreeningRules = ScreeningRules()
) -> list[RaterReport]:
    """Return each rater's screening: failed checks, and per dimension straight-lining and correlation.

    Straight-lining (variance of a rater's scores on one dimension under the threshold) and low
    correlation with the mean of the other raters are judged per dimension on the rated stimuli,
    since a rater can be attentive on content and flat on audio. Every reason names its evidence.
    """
    checks = failed_checks(rows, expectations)
    kinds = {row.stimulus: row.kind for row in rows}
    raters = sorted({row.rater for row in rows})
    screens: dict[str, dict[str, RaterScreen]] = defaultdict(dict)
    dimensions = sorted({row.dimension for row in rows if row.kind == "rated"})
    for dimension in dimensions:
        table = [(row.rater, row.stimulus, float(row.score)) for row in rows if _counts(row, dimension)]
        for screen in screen_raters(table, rules.variance_threshold, rules.correlation_threshold):
            screens[screen.rater][dimension] = screen
    checks_of: dict[str, dict[str, bool]] = defaultdict(dict)
    for (who, stimulus), failed in checks.items():
        checks_of[who][stimulus] = failed
    rated_count = Counter(row.rater for row in rows if row.kind == "rated")
    reports = []
    for rater in raters:
        own = checks_of[rater]
        gold = [failed for stimulus, failed in own.items() if kinds[stimulus] == "gold"]
        traps = [failed for stimulus, failed in own.items() if kinds[stimulus] == "trap"]
        reasons = []
        if sum(gold) + sum(traps) > rules.allowed_check_failures:
            if sum(traps):
                reasons.append(f"failed {sum(traps)} of {len(traps)} trapping items")
            if sum(gold):
                reasons.append(f"failed {sum(gold)} of {len(gold)} gold items")
        for dimension, screen in sorted(screens[rater].items()):
            if screen.straightlining:
                reasons.append(
                    f"straight-lining on {_label(dimension)}: variance {screen.variance:.2f} "
                    f"< {rules.variance_threshold:g} over {screen.n_ratings} ratings"
                )
            if screen.low_correlation:
                reasons.append(
                    f"low agreement on {_label(dimension)}: r = {screen.correlation_with_others:.2f} "
                    f"< {rules.correlation_threshold:g} with the other raters' mean"
                )
        reports.append(
            RaterReport(
                rater=rater,
                n_ratings=rated_count[rater],
                gold_checked=len(gold),
                gold_failed=sum(gold),
                traps_checked=len(traps),
                traps_failed=sum(traps),
                by_dimension=dict(screens[rater]),
                reasons=tuple(reasons),
            )
        )
    return reports


def _label(dimension: str) -> str:
    return DIMENSIONS[dimension].label if dimension in DIMENSIONS else dimension


def _counts(row: RatingRow, dimension: str) -> bool:
    return row.kind == "rated" and row.dimension == dimension
