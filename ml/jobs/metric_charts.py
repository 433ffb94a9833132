"""Job metrics (``Job.metrics``: a list of {step, name: value}) grouped into the job page's charts.

Pure: the job page renders the result as JSON for chart.js and the tests read it directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

# (chart id, title, rule) in page order; a metric goes to the first chart whose rule matches it.
_LOSS = ("loss", "ce", "aaa", "kl", "content_loss", "alignment_loss")
_CHARTS: tuple[tuple[str, str, Any], ...] = (
    ("loss", "Loss", lambda name: name in _LOSS),
    ("rho", "Attention mass on audio (rho)", lambda name: name == "rho"),
    (
        "rewards",
        "Rewards and scores",
        lambda name: name.startswith("reward_") or name in ("content_mean", "alignment_mean"),
    ),
    ("advantages", "Mean |advantage| per span", lambda name: name.startswith("advantage_abs_")),
    ("outputs", "Outputs", lambda name: name == "well_formed_fraction"),
)


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float | None]  # None where a step did not report this metric


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    steps: list[int]
    series: list[Series]


def metric_charts(points: Sequence[Mapping[str, Any]]) -> list[Chart]:
    """Return one chart per group of metrics that occur, in page order; empty when there are no points."""
    steps = [int(point.get("step", index + 1)) for index, point in enumerate(points)]
    names: list[str] = []
    for point in points:
        names.extend(name for name in point if name != "step" and name not in names)
    charts: list[Chart] = []
    for chart_id, title, belongs in _CHARTS:
        members = [name for name in names if belongs(name)]
        if not members:
            continue
        series = [Series(name, [_number(point.get(name)) for point in points]) for name in members]
        charts.append(Chart(chart_id, title, steps, series))
    return charts


def charts_json(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return ``metric_charts`` as plain JSON-ready dicts."""
    return [asdict(chart) for chart in metric_charts(points)]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
