"""What the acoustic analysis of a take suggests for the perception fields, and what the waveform draws.

The analysis job (annotation.recording.takes) stores its results on the take: scalar features
(`Take.features`: `acoustics.scalar_features` plus `pitch_level`, `energy_level` and `rate_level`
against the speaker's other takes) and display contours (`Take.contours`, from
`acoustics.contours_for_display`), and the speech check (`Take.qc["speech"]`, see
`annotation.audio.speech.take_check`: the aligned words and phones per second). These
functions read them defensively: a take analysed before a field existed, or not analysed at all,
simply suggests less.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotation.audio.stress import StressCandidate, TimedWord, stress_candidates
from annotation.audio.voice_drafts import FEMALE, MALE
from webapp.lib.vocabulary import INTENSITIES, INTONATIONS, PROSODY_LEVELS


@dataclass(frozen=True)
class WordTiming:
    """What a take's forced alignment puts under its waveform: the words at their times, the
    speaking rate, and the words that sound stressed (suggestions, never labels)."""

    words: list[TimedWord]
    phones_per_second: float | None
    stress: list[StressCandidate]

    @property
    def stressed_indexes(self) -> set[int]:
        """Return the positions (in `words`) of the stress candidates."""
        return {candidate.index for candidate in self.stress}


def suggestions_from_features(features: Mapping[str, Any]) -> dict[str, str]:
    """Return {field: value} for the pitch, energy, rate, intensity and intonation the analysis suggests.

    Levels come from `pitch_level`, `energy_level` and `rate_level` (None when the speaker has too
    few other takes to compare with), intensity from `intensity_draft` (`voice_drafts`), intonation
    from `intonation`; values outside the label vocabularies are ignored.
    """
    suggestions: dict[str, str] = {}
    for field in ("pitch", "energy", "rate"):
        value = features.get(f"{field}_level")
        if value in PROSODY_LEVELS:
            suggestions[field] = str(value)
    intensity = features.get("intensity_draft")
    if intensity in INTENSITIES:
        suggestions["intensity"] = str(intensity)
    intonation = features.get("intonation")
    if intonation in INTONATIONS:
        suggestions["intonation"] = str(intonation)
    return suggestions


def gender_suggestion(features: Mapping[str, Any]) -> str | None:
    """Return the speaker's gender the analysis suggests (`voice_drafts.gender_draft`), shown beside
    the audio as a draft with its measured accuracy; no label field holds it."""
    gender = features.get("gender_draft")
    return str(gender) if gender in (FEMALE, MALE) else None


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


def word_timing(qc: Mapping[str, Any], tracks: Mapping[str, list[list[float]]]) -> WordTiming | None:
    """Return a take's aligned words, phones per second and stress candidates; None before a speech check.

    Stress compares each word's duration, pitch and energy with the utterance's
    (`annotation.audio.stress`), reading pitch and energy from the waveform's tracks
    (`contours_for_waveform` of the stored display contours).
    """
    speech = qc.get("speech") if qc else None
    if not isinstance(speech, Mapping) or not speech.get("words"):
        return None
    words = [
        TimedWord(str(word["text"]), float(word["start"]), float(word["end"]), int(word.get("phones") or 0))
        for word in speech["words"]
        if isinstance(word, Mapping)
        and isinstance(word.get("start"), int | float)
        and isinstance(word.get("end"), int | float)
    ]
    rate = speech.get("phones_per_second")
    return WordTiming(
        words=words,
        phones_per_second=float(rate) if isinstance(rate, int | float) else None,
        stress=stress_candidates(
            words,
            [(time, value) for time, value in tracks.get("pitch", [])],
            [(time, value) for time, value in tracks.get("energy", [])],
        ),
    )
