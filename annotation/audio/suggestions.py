"""What the acoustic analysis of a take suggests for the perception fields, and what the waveform draws.

The analysis job (annotation.recording.takes) stores its results on the take: scalar features
(`Take.features`: `acoustics.scalar_features` plus `pitch_level`, `energy_level` and `rate_level`
against the speaker's other takes) and display contours (`Take.contours`, from
`acoustics.contours_for_display`). These
functions read them defensively: a take analysed before a field existed, or not analysed at all,
simply suggests less.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from webapp.lib.vocabulary import INTONATIONS, PROSODY_LEVELS


def suggestions_from_features(features: Mapping[str, Any]) -> dict[str, str]:
    """Return {field: value} for the pitch, energy, rate and intonation the analysis suggests.

    Levels come from `pitch_level`, `energy_level` and `rate_level` (None when the speaker has too
    few other takes to compare with), intonation from `intonation`; values outside the label
    vocabularies are ignored.
    """
    suggestions: dict[str, str] = {}
    for field in ("pitch", "energy", "rate"):
        value = features.get(f"{field}_level")
        if value in PROSODY_LEVELS:
            suggestions[field] = str(value)
    intonation = features.get("intonation")
    if intonation in INTONATIONS:
        suggestions["intonation"] = str(intonation)
    return suggestions


def contours_for_waveform(contours: Mapping[str, Any]) -> dict[str, list[list[float]]]:
    """Return {"pitch": [[t, hz], ...], "energy": [[t, db], ...]} with unvoiced frames left out.

    Accepts the DisplayContours shape ({"pitch": {"times", "hz"}, "intensity": {"times", "db"}});
    anything else yields empty lists, and the page then draws the waveform alone.
    """

    def points(series: object, value_key: str) -> list[list[float]]:
        if not isinstance(series, Mapping):
            return []
        times, values = series.get("times") or [], series.get(value_key) or []
        return [
            [round(float(t), 3), round(float(v), 2)]
            for t, v in zip(times, values, strict=False)
            if isinstance(t, int | float) and isinstance(v, int | float) and math.isfinite(v)
        ]

    return {
        "pitch": points(contours.get("pitch"), "hz"),
        "energy": points(contours.get("intensity"), "db"),
    }
