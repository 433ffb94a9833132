"""Error propagation between the stages (paper Table 8) from plain stage scores."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from evaluation.judging.rubrics import PERCEPTION, REASONING, RESPONSE_CONTENT, SHIFT_PERCEPTION, stage_max
from evaluation.results.leaderboard import StageRecord, index_records
from webapp.lib.coverage import Coverage, comparable


@dataclass(frozen=True)
class ErrorPropagation:
    """Stage-to-stage error propagation for one system (paper Table 8).

    Population: items whose perception (shift perception on emotion-shift items), reasoning and
    response-content scores are all valid; items with any judge error are counted in
    n_items_excluded and left out. A stage is correct when score / stage maximum >= threshold.
    The response stage is judged by its content score: the cascade the paper studies runs from
    understanding the user to what is said; audio delivery is scored independently.

    - p_reasoning_given_perception = n(P ok, R ok) / n(P ok)
    - p_response_given_reasoning = n(R ok, Resp ok) / n(R ok)
    - cascade_error_ratio: how often an error is passed on to the next stage, pooled over both
      transitions: (n(P wrong, R wrong) + n(R wrong, Resp wrong)) / (n(P wrong) + n(R wrong)).
      The paper names this ratio ("overall cascaded failures", lower is better) without a formula;
      this is the error-side mirror of the two conditional correctness figures.
    Probabilities are None when their denominator is 0.

    Coverage (`webapp.lib.coverage`): n_items of n_expected, the items expected of every system
    (those any system was asked); a system judged on fewer is flagged not comparable.
    """

    system: str
    threshold: float
    n_items: int
    n_items_excluded: int
    n_perception_correct: int
    n_perception_and_reasoning_correct: int
    n_reasoning_correct: int
    n_reasoning_and_response_correct: int
    n_perception_wrong: int
    n_perception_and_reasoning_wrong: int
    n_reasoning_wrong: int
    n_reasoning_and_response_wrong: int
    p_reasoning_given_perception: float | None
    p_response_given_reasoning: float | None
    cascade_error_ratio: float | None
    n_expected: int = 0  # N: the items expected of every system

    @property
    def coverage(self) -> Coverage:
        """Return n of N: the items behind the figures, of those expected."""
        return Coverage(self.n_items, self.n_expected)

    @property
    def comparable(self) -> bool:
        """Return whether the system was judged on every expected item (a judge error counts as judged)."""
        return comparable(self.n_items + self.n_items_excluded, self.n_expected)


def error_propagation(
    records: Iterable[StageRecord], threshold: float = 0.6, n_expected: int | None = None
) -> dict[str, ErrorPropagation]:
    """Return Table-8 error propagation figures per system; threshold is a share of each stage's maximum.

    `n_expected` is the number of items expected of every system (default: the items any record names)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError("threshold is a share of the stage maximum, in (0, 1]")
    scores = index_records(records)
    items: dict[str, dict[Hashable, dict[str, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for (system, item, stage), (_scenario, score) in scores.items():
        chain_stage = PERCEPTION if stage == SHIFT_PERCEPTION else stage
        items[system][item][chain_stage] = None if score is None else score / stage_max(stage)

    chain = (PERCEPTION, REASONING, RESPONSE_CONTENT)
    if n_expected is None:
        n_expected = len({item for by_item in items.values() for item in by_item})
    result = {}
    for system in sorted(items):
        complete: list[tuple[bool, bool, bool]] = []
        excluded = 0
        for stages in items[system].values():
            values = [stages.get(stage) for stage in chain]
            if any(value is None for value in values):
                excluded += 1
                continue
            perception_ok, reasoning_ok, response_ok = (
                value >= threshold for value in values if value is not None
            )
            complete.append((perception_ok, reasoning_ok, response_ok))
        result[system] = propagation(system, threshold, complete, excluded, n_expected)
    return result


def propagation(
    system: str,
    threshold: float,
    complete: Sequence[tuple[bool, bool, bool]],
    excluded: int,
    n_expected: int = 0,
) -> ErrorPropagation:
    p_ok = sum(1 for p, _, _ in complete if p)
    p_r_ok = sum(1 for p, r, _ in complete if p and r)
    r_ok = sum(1 for _, r, _ in complete if r)
    r_resp_ok = sum(1 for _, r, resp in complete if r and resp)
    p_wrong = len(complete) - p_ok
    p_r_wrong = sum(1 for p, r, _ in complete if not p and not r)
    r_wrong = len(complete) - r_ok
    r_resp_wrong = sum(1 for _, r, resp in complete if not r and not resp)
    return ErrorPropagation(
        system=system,
        threshold=threshold,
        n_items=len(complete),
        n_items_excluded=excluded,
        n_perception_correct=p_ok,
        n_perception_and_reasoning_correct=p_r_ok,
        n_reasoning_correct=r_ok,
        n_reasoning_and_response_correct=r_resp_ok,
        n_perception_wrong=p_wrong,
        n_perception_and_reasoning_wrong=p_r_wrong,
        n_reasoning_wrong=r_wrong,
        n_reasoning_and_response_wrong=r_resp_wrong,
        p_reasoning_given_perception=_ratio(p_r_ok, p_ok),
        p_response_given_reasoning=_ratio(r_resp_ok, r_ok),
        cascade_error_ratio=_ratio(p_r_wrong + r_resp_wrong, p_wrong + r_wrong),
        n_expected=n_expected,
    )


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None
