"""A judge audit's probes and statistics: pure functions over plain data (no Django).

A judge audit asks one judge configuration the same rubric prompts several ways and measures:

- self-consistency: the same prompt judged k times (`score_spread`, `cap_flips`);
- sensitivity to what should not matter: a reply padded with neutral sentences (`pad_reply`), the
  output's fields in another order (`reorder_fields`), the same reply voiced otherwise; each a
  paired score difference with a 95% t interval (`paired_difference`);
- sensitivity to what should matter: a perception naming the wrong primary emotion
  (`with_wrong_emotion`) or a reasoning recommending a not-recommended strategy
  (`with_strategy`) must reach its cap (`cap_hits`);
- agreement: Krippendorff's alpha with a bootstrap interval (`alpha_with_interval`).

Every figure is a `Figure`: an estimate, its 95% interval and the n it stands on. Scores are
compared as a fraction of the stage's maximum, so stages of 10 and of 5 points pool alike.
`ensemble_answer` is the rubric answer of an ensemble judge: the median of its members'.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from webapp.lib.stats import Level, krippendorff_alpha, wilson_interval

CONFIDENCE = 0.95
# Sentences that add length and say nothing about the user, their feeling or what to do.
NEUTRAL_SENTENCES: tuple[str, ...] = (
    "I am replying to what you said.",
    "This is my answer to you.",
    "Here is what I would say.",
    "I have read your message.",
)


@dataclass(frozen=True)
class Figure:
    """One audit figure: an estimate with its 95% interval (None when n is too small) and its n."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    note: str = ""

    @property
    def excludes_zero(self) -> bool:
        """Return True when the interval lies wholly on one side of 0 (a bias, for a difference)."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "excludes_zero": self.excludes_zero}


# --- Probes: changed copies of what the judge reads -----------------------------------------------


def pad_reply(text: str, sentences: int = 3) -> str:
    """Return the text followed by `sentences` neutral sentences (its meaning unchanged)."""
    padding = " ".join(NEUTRAL_SENTENCES[i % len(NEUTRAL_SENTENCES)] for i in range(sentences))
    return f"{text.rstrip()} {padding}" if text.strip() else text


def reorder_fields(shown: str | Mapping[str, Any]) -> str | dict[str, Any] | None:
    """Return the output with its fields in reverse order, or None when it has fewer than two.

    A mapping of fields is reversed key by key; a text is reversed paragraph by paragraph (the
    output formats separate their parts by blank lines).
    """
    if isinstance(shown, Mapping):
        keys = [key for key in shown if key not in ("audio_base64", "audio_format")]
        if len(keys) < 2:
            return None
        return {
            **{key: shown[key] for key in reversed(keys)},
            **{k: v for k, v in shown.items() if k not in keys},
        }
    parts = [part for part in re.split(r"\n\s*\n", shown) if part.strip()]
    if len(parts) < 2:
        return None
    return "\n\n".join(reversed(parts))


def wrong_emotion_for(gold_emotion: str, emotions: Sequence[str]) -> str | None:
    """Return a primary emotion other than the gold one (the next in the vocabulary), or None."""
    if gold_emotion not in emotions or len(emotions) < 2:
        return None
    return emotions[(emotions.index(gold_emotion) + 1) % len(emotions)]


def with_wrong_emotion(text: str, gold_emotion: str, wrong: str) -> str:
    """Return the perception text naming `wrong` where it named the gold emotion (stated first
    when it never named it)."""
    pattern = re.compile(rf"\b{re.escape(gold_emotion)}\b", re.IGNORECASE)
    if pattern.search(text):
        return pattern.sub(wrong, text)
    return f"Primary emotion: {wrong}. {text}".strip()


def with_strategy(
    shown: str | Mapping[str, Any], strategy: str
) -> tuple[str | dict[str, Any], dict[str, Any]]:
    """Return the reasoning output recommending `strategy` instead of its own, and the fields the
    app's automatic flags read (`evaluation.judging.rubrics.automatic_flags`)."""
    if isinstance(shown, Mapping):
        fields = {**shown, "strategy": [strategy]}
        return fields, fields
    parts = [part for part in re.split(r"\n\s*\n", shown) if part.strip()]
    reasoning = parts[0] if parts else ""
    text = "\n\n".join([reasoning, f"Strategy: {strategy}"]) if reasoning else f"Strategy: {strategy}"
    return text, {
        "context": reasoning,
        "latent_need": reasoning,
        "core_demand": reasoning,
        "strategy": [strategy],
    }


# --- Statistics --------------------------------------------------------------------------------------


def paired_difference(pairs: Sequence[tuple[float, float]]) -> Figure:
    """Return the mean of (changed - original) with a 95% t interval over the pairs."""
    from scipy import stats as scipy_stats  # heavy: loaded by the audit, not the web app

    differences = np.array([changed - original for original, changed in pairs], dtype=float)
    n = len(differences)
    if n == 0:
        return Figure(None, None, None, 0, "no pairs")
    mean = float(differences.mean())
    if n < 2:
        return Figure(mean, None, None, n, "needs two pairs for an interval")
    half = float(scipy_stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * differences.std(ddof=1) / math.sqrt(n))
    return Figure(mean, mean - half, mean + half, n)


def bootstrap_mean(values: Sequence[float], n_boot: int = 2000, seed: int = 0) -> Figure:
    """Return the mean with a percentile bootstrap 95% interval."""
    data = np.asarray(values, dtype=float)
    if not len(data):
        return Figure(None, None, None, 0, "no values")
    picks = np.random.default_rng(seed).integers(0, len(data), size=(n_boot, len(data)))
    means = data[picks].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Figure(float(data.mean()), float(low), float(high), len(data))


def score_spread(repeats: Mapping[Any, Sequence[float]]) -> Figure:
    """Return the mean over prompts of the standard deviation of their k repeated scores, with a
    bootstrap interval over prompts (prompts with fewer than two valid repeats are left out)."""
    spreads = [statistics.pstdev(scores) for scores in repeats.values() if len(scores) >= 2]
    return bootstrap_mean(spreads)


def share(hits: Sequence[bool]) -> Figure:
    """Return the share of True with its Wilson 95% interval."""
    proportion = wilson_interval(sum(hits), len(hits))
    return Figure(proportion.rate, proportion.low, proportion.high, len(hits))


def cap_flips(repeats: Mapping[Any, Sequence[bool]]) -> Figure:
    """Return the share of prompts whose repeats disagree on whether a hard cap applied."""
    return share([len(set(capped)) > 1 for capped in repeats.values() if len(capped) >= 2])


def cap_hits(finals_and_caps: Sequence[tuple[float, int]]) -> Figure:
    """Return the share of probe replies whose final score is at or below the cap they must hit."""
    return share([final <= cap for final, cap in finals_and_caps])


def alpha_with_interval(
    table: Sequence[Sequence[float | None]], level: Level = "interval", n_boot: int = 1000, seed: int = 0
) -> Figure:
    """Return Krippendorff's alpha (`webapp.lib.stats.krippendorff_alpha`) of a units x raters table
    with a percentile bootstrap 95% interval over units; n counts units rated twice or more."""
    units = [list(unit) for unit in table if sum(value is not None for value in unit) >= 2]
    n = len(units)
    try:
        alpha = krippendorff_alpha(units, level)
    except ValueError as exc:
        return Figure(None, None, None, n, str(exc))
    rng = np.random.default_rng(seed)
    replicates = []
    for _ in range(n_boot):
        resample = [units[i] for i in rng.integers(0, n, size=n)]
        try:
            replicates.append(krippendorff_alpha(resample, level))
        except (ValueError, ZeroDivisionError):
            continue  # a resample with a single value: alpha undefined
    if not replicates:
        return Figure(alpha, None, None, n, "every resample had one value")
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return Figure(alpha, float(low), float(high), n)


# --- The ensemble judge ---------------------------------------------------------------------------


def ensemble_answer(answers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the rubric answer of an ensemble: each sub-score the median of the members' (the
    lower median for an even count, so it stays a whole number) and each flag raised by a majority.

    `answers` are the members' valid answers (subscores, flags); members without one are left out.
    """
    if not answers:
        raise ValueError("an ensemble needs at least one member's answer")
    names = sorted({name for answer in answers for name in answer.get("subscores", {})})
    subscores = {
        name: statistics.median_low(
            [answer["subscores"][name] for answer in answers if name in answer["subscores"]]
        )
        for name in names
    }
    counts: dict[str, int] = {}
    for answer in answers:
        for flag in set(answer.get("flags") or []):
            counts[flag] = counts.get(flag, 0) + 1
    flags = sorted(flag for flag, count in counts.items() if count * 2 > len(answers))
    return {
        "subscores": subscores,
        "flags": flags,
        "rationale": f"Median of {len(answers)} judges' sub-scores; flags raised by a majority of them.",
    }


# --- Charts -----------------------------------------------------------------------------------------

CHART_WIDTH = 360  # px of the plotting band of an interval chart
ROW_HEIGHT = 22


def interval_chart(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    low: float = -1.0,
    high: float = 1.0,
    *,
    differences: bool = False,
) -> dict[str, Any]:
    """Return an SVG interval chart's geometry: per row (label, figure as `Figure.as_dict`) the x of
    the estimate and the interval's ends on [low, high], and the x of 0 (the line of no effect).

    For `differences` (a change that should be 0), a row whose interval excludes 0 is a bias
    (`row["bias"]`, drawn red)."""

    def x(value: float) -> float:
        clipped = min(high, max(low, value))
        return round((clipped - low) / (high - low) * CHART_WIDTH, 1)

    drawn = []
    for index, (label, figure) in enumerate(rows):
        estimate = figure.get("estimate")
        drawn.append(
            {
                "label": label,
                "figure": figure,
                "y": index * ROW_HEIGHT + ROW_HEIGHT // 2,
                "x": None if estimate is None else x(estimate),
                "x_low": None if figure.get("low") is None else x(figure["low"]),
                "x_high": None if figure.get("high") is None else x(figure["high"]),
                "bias": differences and bool(figure.get("excludes_zero")),
            }
        )
    return {
        "rows": drawn,
        "width": CHART_WIDTH,
        "height": max(1, len(rows)) * ROW_HEIGHT,
        "x_zero": x(0.0) if low <= 0.0 <= high else None,
        "low": low,
        "high": high,
    }
