"""Which aligned words sound stressed: each word's duration, pitch and energy against the utterance.

A stressed word is said longer, higher and louder than the words around it. Each cue compares a
word with the take's own median word, so the voice, the microphone and the actor's usual pace
cancel. A word showing at least `MIN_CUES` of the three cues is a candidate; the workbench
offers candidates as suggestions beside the script, never as labels (an annotator decides).

Pure: plain words, plain (time, value) tracks (the take's display contours), no numpy, no Django.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# A word at least this many times longer per phone than the median word is "longer".
LONGER_RATIO = 1.3
# Its pitch peak at least this many semitones above the median word's peak is "higher".
HIGHER_SEMITONES = 2.0
# Its energy peak at least this many dB above the median word's peak is "louder".
LOUDER_DB = 3.0
MIN_CUES = 2
# Fewer aligned words than this have no utterance to stand out against.
MIN_WORDS = 3

Track = Sequence[tuple[float, float | None]]  # (seconds, value); None where unmeasured (unvoiced)


@dataclass(frozen=True)
class TimedWord:
    text: str
    start: float
    end: float
    phones: int  # how many phones the aligner found in it (0 when unknown)


@dataclass(frozen=True)
class StressCandidate:
    index: int  # the word's position among the aligned words
    text: str
    cues: tuple[str, ...]  # of "longer", "higher", "louder", in that order
    strength: float  # how far past the thresholds, summed over the cues; ranks candidates


def stress_candidates(words: Sequence[TimedWord], pitch_hz: Track, energy_db: Track) -> list[StressCandidate]:
    """Return the words that sound stressed against the rest of the utterance, in spoken order.

    Duration is per phone (a long word is not a stressed one), pitch is each word's peak in
    semitones, energy each word's peak in dB; a word without pitch (unvoiced) or energy frames
    simply lacks that cue.
    """
    if len(words) < MIN_WORDS:
        return []
    per_phone = [(word.end - word.start) / max(word.phones, 1) for word in words]
    peaks_st = [_peak(pitch_hz, word, semitones=True) for word in words]
    peaks_db = [_peak(energy_db, word, semitones=False) for word in words]
    typical_length = statistics.median(per_phone)
    typical_pitch = _median_known(peaks_st)
    typical_energy = _median_known(peaks_db)

    candidates: list[StressCandidate] = []
    for index, word in enumerate(words):
        excess: dict[str, float] = {}
        if typical_length > 0 and per_phone[index] / typical_length >= LONGER_RATIO:
            excess["longer"] = (per_phone[index] / typical_length - 1) / (LONGER_RATIO - 1)
        pitch, energy = peaks_st[index], peaks_db[index]
        if pitch is not None and typical_pitch is not None and pitch - typical_pitch >= HIGHER_SEMITONES:
            excess["higher"] = (pitch - typical_pitch) / HIGHER_SEMITONES
        if energy is not None and typical_energy is not None and energy - typical_energy >= LOUDER_DB:
            excess["louder"] = (energy - typical_energy) / LOUDER_DB
        if len(excess) >= MIN_CUES:
            candidates.append(StressCandidate(index, word.text, tuple(excess), round(sum(excess.values()), 2)))
    return candidates


def _peak(track: Track, word: TimedWord, *, semitones: bool) -> float | None:
    values = [
        value
        for time, value in track
        if word.start <= time <= word.end and value is not None and math.isfinite(value)
    ]
    if semitones:
        values = [12.0 * math.log2(value) for value in values if value > 0]
    return max(values) if values else None


def _median_known(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None
