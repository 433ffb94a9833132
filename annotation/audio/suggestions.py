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
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotation.audio.stress import StressCandidate, TimedWord, stress_candidates
from webapp.lib.vocabulary import FEMALE, INTENSITIES, INTONATIONS, MALE, PROSODY_LEVELS


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


def word_timing_summary(qc: Mapping[str, Any]) -> WordTiming | None:
    """Return a take's speaking rate without its words (a long take's page loads them per window,
    `take_window`); None before a speech check, as `word_timing`."""
    speech = qc.get("speech") if qc else None
    if not isinstance(speech, Mapping) or not speech.get("words"):
        return None
    rate = speech.get("phones_per_second")
    return WordTiming(
        words=[], phones_per_second=float(rate) if isinstance(rate, int | float) else None, stress=[]
    )


# Takes longer than this load their contours and words per visible window (issue 46): the page
# carries neither, and asks `take_window` for the part in view (plus a margin) as it is scrolled
# and zoomed. Shorter takes keep both on the page, as before.
WINDOWED_SECONDS = 60.0
# At most this many points per track in one window (a screen is about as many pixels wide): a
# window wider than that many stored points is averaged down, bin by bin.
WINDOW_POINTS = 1200
# At most this many words in one window; more (the whole of a long take at once) are left out and
# counted, and the ruler says to zoom in: a word over less than a pixel cannot be read or clicked.
WINDOW_WORDS = 400


def is_windowed(duration_seconds: float) -> bool:
    """Whether a take this long loads its contours and words per window."""
    return duration_seconds > WINDOWED_SECONDS


def _track_window(points: list[list[float]], start: float, end: float) -> list[list[float]]:
    """The points of one track inside [start, end], averaged down to at most `WINDOW_POINTS`."""
    times = [point[0] for point in points]
    inside = points[bisect_left(times, start) : bisect_right(times, end)]
    if len(inside) <= WINDOW_POINTS:
        return inside
    size = len(inside) / WINDOW_POINTS
    averaged = []
    for index in range(WINDOW_POINTS):
        chunk = inside[int(index * size) : int((index + 1) * size)]
        if chunk:
            averaged.append(
                [
                    round(sum(p[0] for p in chunk) / len(chunk), 3),
                    round(sum(p[1] for p in chunk) / len(chunk), 2),
                ]
            )
    return averaged


def take_window(
    tracks: Mapping[str, list[list[float]]], timing: WordTiming | None, start: float, end: float
) -> dict[str, Any]:
    """Return the part of a take's waveform tracks and aligned words inside [start, end] seconds.

    {"start", "end", "pitch": [[t, hz], ...], "energy": [[t, db], ...], "words": [{"text",
    "start", "end", "stress"}], "words_total": words overlapping the window}; "words" is empty
    when more than `WINDOW_WORDS` overlap it. Stress is judged against the whole take, as on a
    short take's page.
    """
    words: list[dict[str, Any]] = []
    total = 0
    if timing is not None:
        stressed = timing.stressed_indexes
        overlapping = [
            (index, word)
            for index, word in enumerate(timing.words)
            if word.end >= start and word.start <= end
        ]
        total = len(overlapping)
        if total <= WINDOW_WORDS:
            words = [
                {"text": word.text, "start": word.start, "end": word.end, "stress": index in stressed}
                for index, word in overlapping
            ]
    return {
        "start": start,
        "end": end,
        "pitch": _track_window(list(tracks.get("pitch", [])), start, end),
        "energy": _track_window(list(tracks.get("energy", [])), start, end),
        "words": words,
        "words_total": total,
    }
