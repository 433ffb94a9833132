"""What one take's analysis becomes for the studio: levels against the speaker's other takes
(`relative_levels`, read by `annotation.recording.takes.levels_against`), and pitch and intensity
contours thinned for display.

Pure like `annotation.audio.acoustics`, whose AcousticAnalysis it reads; nothing here touches
files or Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

from annotation.audio.acoustics import AcousticAnalysis, FloatArray
from webapp.lib.vocabulary import PROSODY_LEVELS

# One of the perception vocabulary's prosody levels, named for `relative_levels`.
Level = str
LOW, NORMAL, HIGH = PROSODY_LEVELS

# Levels against the speaker's other takes: |z| above this is high/low (about the top and bottom
# sixth of a normal spread). Fewer other takes than MIN_TAKES_FOR_LEVELS say nothing.
LEVEL_Z_THRESHOLD = 1.0
MIN_TAKES_FOR_LEVELS = 3


def relative_levels(value: float, others: Sequence[float]) -> Level:
    """Return whether `value` is low, normal or high against the same speaker's other takes.

    A z-score against `others` beyond LEVEL_Z_THRESHOLD; "normal" with fewer than
    MIN_TAKES_FOR_LEVELS others, since a spread cannot be judged from one or two.
    """
    if len(others) < MIN_TAKES_FOR_LEVELS:
        return NORMAL
    mean, spread = float(np.mean(others)), float(np.std(others, ddof=1))
    if spread == 0.0:
        return NORMAL if value == mean else (HIGH if value > mean else LOW)
    z = (value - mean) / spread
    if z > LEVEL_Z_THRESHOLD:
        return HIGH
    if z < -LEVEL_Z_THRESHOLD:
        return LOW
    return NORMAL


class PitchContour(TypedDict):
    times: list[float]
    hz: list[float | None]  # None where unvoiced


class IntensityContour(TypedDict):
    times: list[float]
    db: list[float | None]


class DisplayContours(TypedDict):
    pitch: PitchContour
    intensity: IntensityContour


# Display contours keep at most 400 points, or 20 per second on a long take (issue 46): a long take
# loads them per window (`suggestions.take_window`), so zooming into it shows 50 ms detail.
DISPLAY_POINTS = 400
DISPLAY_POINTS_PER_SECOND = 20


def display_points(seconds: float) -> int:
    """Return how many points a take this long keeps per display contour."""
    return max(DISPLAY_POINTS, math.ceil(seconds * DISPLAY_POINTS_PER_SECOND))


def contours_for_display(analysis: AcousticAnalysis, max_points: int = DISPLAY_POINTS) -> DisplayContours:
    """Return pitch and intensity contours with at most `max_points` points each, JSON-safe.

    Neighbouring frames are averaged (voiced frames only for pitch) rather than picked, so a
    short voiced stretch still shows; a point with no voiced frame is None, a gap in the line.
    """
    pitch_times, pitch_hz = _bin_average(analysis.pitch_times, analysis.pitch_hz, max_points)
    intensity_times, intensity_db = _bin_average(analysis.intensity_times, analysis.intensity_db, max_points)
    return {
        "pitch": {"times": [round(float(t), 3) for t in pitch_times], "hz": _rounded(pitch_hz, 1)},
        "intensity": {
            "times": [round(float(t), 3) for t in intensity_times],
            "db": _rounded(intensity_db, 1),
        },
    }


def contours_overview(contours: Mapping[str, Any], max_points: int = DISPLAY_POINTS) -> dict[str, Any]:
    """Return stored display contours (`contours_for_display`'s shape) with at most `max_points`
    points each, averaged as there: what a page showing a whole long take carries (the take page),
    not the 20 points a second it keeps for windows. Shorter contours come back as they are."""
    series = {"pitch": "hz", "intensity": "db"}
    overview: dict[str, Any] = dict(contours)
    for name, key in series.items():
        track = contours.get(name)
        if not isinstance(track, Mapping) or len(track.get("times") or []) <= max_points:
            continue
        values = np.array([np.nan if v is None else float(v) for v in track[key]], dtype=np.float64)
        times, averaged = _bin_average(np.asarray(track["times"], dtype=np.float64), values, max_points)
        overview[name] = {"times": [round(float(t), 3) for t in times], key: _rounded(averaged, 1)}
    return overview


def _bin_average(times: FloatArray, values: FloatArray, max_points: int) -> tuple[FloatArray, FloatArray]:
    if max_points < 1:
        raise ValueError(f"max_points must be at least 1, got {max_points}")
    if times.size <= max_points:
        return times, values
    time_bins = np.array_split(times, max_points)
    value_bins = np.array_split(values, max_points)
    binned_times = np.array([float(np.mean(b)) for b in time_bins])
    binned_values = np.array(
        [float(np.mean(v[~np.isnan(v)])) if np.any(~np.isnan(v)) else np.nan for v in value_bins]
    )
    return binned_times, binned_values


def _rounded(values: FloatArray, digits: int) -> list[float | None]:
    return [None if math.isnan(v) else round(float(v), digits) for v in values]
