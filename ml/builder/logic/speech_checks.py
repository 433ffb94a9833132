"""What the speech models hear in a build's user audio, each against the same words read neutrally.

Every user turn is read twice by the same voice: as the sample asks (emotion, intensity, the
stressed word) and neutrally (no emotion, no emphasis). Comparing the two readings of the same
text cancels what the text itself does to a measure (issue 25: a neutral-speed reading of short
words used to read as fast, and a reading 31% faster as slow, against a fixed other sentence).

- Rate: phones per second over speech only (the forced aligner's words; pauses between words
  excluded), as a ratio to the neutral reading's. `perception.prosody_levels` and the acoustic
  consistency check read it through `rate_ratio`.
- Stress: a word is heard stressed when it changed more than the utterance's median word did
  between the neutral reading and this one: louder by LOUDER_DB, or both longer per phone by
  LONGER_RATIO and higher by HIGHER_SEMITONES. Against the neutral reading rather than against
  its own utterance (`annotation.audio.stress`, the workbench's suggestions) because eSpeak NG's
  strong emphasis is about +4 dB and x1.15 in length and no higher, less than the sentence accent
  moves a word: the within-utterance rule found 1 of 12 asked words; this one found 75 of 75 over
  5 voices x 5 sentences x 3 emotions, with another word as well in 9, and a word in none of the 75
  readings that asked for none (measured on this machine, issue 25).
- Pauses: silero-vad's pauses (`annotation.audio.speech.activity`).
- Speaker consistency of a dialogue: each turn's speaker embedding against the mean of its other
  turns (`annotation.audio.speech.speaker`); reported, never a reason to drop.

Pure: stored measurements in, JSON-ready figures out (the audio steps measure, the export sums).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from annotation.audio.speech.rate import RATE_KEY
from annotation.audio.speech.speaker import DOUBTFUL_SIMILARITY, similarity_to

LOUDER_DB = 2.5
LONGER_RATIO = 1.25
HIGHER_SEMITONES = 2.5


def rate_ratio(features: Mapping[str, Any], baseline: Mapping[str, Any]) -> float | None:
    """Return the reading's phones per second over the neutral reading's (None when either lacks it)."""
    rate, neutral = features.get(RATE_KEY), baseline.get(RATE_KEY)
    return rate / neutral if rate and neutral else None


def word_prosody(
    words: Sequence[tuple[str, float, float, int]],
    pitch: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
    intensity: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
) -> list[dict[str, Any]]:
    """Return each aligned word (text, start, end, phones) with its median pitch in semitones (None
    when unvoiced) and its mean energy in dB over its frames, from (times, values) contours."""
    pitch_times, pitch_hz = pitch
    intensity_times, intensity_db = intensity
    measured = []
    for text, start, end, phones in words:
        inside = pitch_hz[(pitch_times >= start) & (pitch_times <= end)]
        voiced = inside[~np.isnan(inside)]
        energy = intensity_db[(intensity_times >= start) & (intensity_times <= end)]
        measured.append(
            {
                "text": text,
                "start": start,
                "end": end,
                "phones": phones,
                "pitch_semitones": round(12 * math.log2(float(np.median(voiced))), 2)
                if voiced.size
                else None,
                # the mean of power, not of dB: one loud frame counts as loud
                "energy_db": round(float(10 * np.log10(np.mean(10 ** (energy / 10)))), 2)
                if energy.size
                else None,
            }
        )
    return measured


def _changes(
    reading: Sequence[Mapping[str, Any]], neutral: Sequence[Mapping[str, Any]], key: str
) -> list[float | None]:
    def difference(now: Any, before: Any) -> float | None:
        return float(now) - float(before) if now is not None and before is not None else None

    return [difference(word.get(key), base.get(key)) for word, base in zip(reading, neutral, strict=True)]


def _relative(changes: Sequence[float | None]) -> list[float | None]:
    known = [change for change in changes if change is not None]
    typical = statistics.median(known) if known else 0.0
    return [None if change is None else change - typical for change in changes]


def stressed_against_neutral(
    reading: Sequence[Mapping[str, Any]], neutral: Sequence[Mapping[str, Any]]
) -> list[str] | None:
    """Return the words of `reading` heard stressed against the same words read neutrally, in
    spoken order; None when the two readings' aligned words differ (they cannot be compared)."""
    if not reading or [w["text"] for w in reading] != [w["text"] for w in neutral]:
        return None
    per_phone = [
        math.log((word["end"] - word["start"]) / max(word["phones"], 1))
        - math.log(max(base["end"] - base["start"], 1e-3) / max(base["phones"], 1))
        if word["end"] > word["start"]
        else None
        for word, base in zip(reading, neutral, strict=True)
    ]
    longer = _relative(per_phone)
    louder = _relative(_changes(reading, neutral, "energy_db"))
    higher = _relative(_changes(reading, neutral, "pitch_semitones"))
    stressed = []
    for index, word in enumerate(reading):
        is_louder = (louder[index] or 0.0) >= LOUDER_DB
        is_longer = (longer[index] or 0.0) >= math.log(LONGER_RATIO)
        is_higher = (higher[index] or 0.0) >= HIGHER_SEMITONES
        if is_louder or (is_longer and is_higher):
            stressed.append(str(word["text"]))
    return stressed


def emphasis_agreement(asked: str, detected: Sequence[str] | None) -> dict[str, Any]:
    """Return the emphasis the builder asked for, the words heard stressed, and whether they agree:
    the asked word is among them, or nothing was asked and nothing heard (None: not compared)."""
    heard = [word.lower() for word in detected] if detected is not None else None
    agrees = None if heard is None else (asked.lower() in heard if asked else not heard)
    return {"asked": asked, "detected": heard, "agrees": agrees}


def turn_similarities(embeddings: Sequence[Sequence[float] | None]) -> list[float | None]:
    """Return each turn's speaker similarity to the mean of the dialogue's other turns (None for a
    turn without an embedding, or with no other turn to compare with)."""
    similarities: list[float | None] = []
    for index, embedding in enumerate(embeddings):
        others = [other for n, other in enumerate(embeddings) if n != index and other is not None]
        similarities.append(similarity_to(embedding, others) if embedding is not None else None)
    return similarities


def _mean(values: Sequence[float], digits: int = 3) -> float | None:
    return round(statistics.fmean(values), digits) if values else None


@dataclass
class SpeechCheckSummary:
    """A build's speech checks summed over its exported samples (the manifest and the build page)."""

    samples: int = 0
    rate_levels: dict[str, int] = field(default_factory=dict)
    rate_ratios: list[float] = field(default_factory=list)
    phones_per_second: list[float] = field(default_factory=list)
    stress_asked: int = 0
    stress_found: int = 0
    stress_unasked: int = 0
    stress_unasked_clean: int = 0
    stress_not_compared: int = 0
    pause_counts: list[int] = field(default_factory=list)
    longest_pauses: list[float] = field(default_factory=list)
    dialogue_similarities: dict[str, list[float]] = field(default_factory=dict)

    def add(self, speech: Mapping[str, Any], dialogue: str = "") -> None:
        """Count one sample's stored checks (`BuildSample.speech`); `dialogue` names its session."""
        self.samples += 1
        level = speech.get("rate_level") or "unmeasured"
        self.rate_levels[level] = self.rate_levels.get(level, 0) + 1
        if speech.get("rate_ratio") is not None:
            self.rate_ratios.append(float(speech["rate_ratio"]))
        if speech.get(RATE_KEY) is not None:
            self.phones_per_second.append(float(speech[RATE_KEY]))
        stress = speech.get("stress") or {}
        if stress.get("agrees") is None:
            self.stress_not_compared += 1
        elif stress.get("asked"):
            self.stress_asked += 1
            self.stress_found += bool(stress["agrees"])
        else:
            self.stress_unasked += 1
            self.stress_unasked_clean += bool(stress["agrees"])
        pauses = speech.get("pauses") or {}
        if pauses:
            self.pause_counts.append(int(pauses.get("count", 0)))
            self.longest_pauses.append(float(pauses.get("longest_seconds", 0.0)))
        similarity = speech.get("speaker_similarity")
        if dialogue and similarity is not None:
            self.dialogue_similarities.setdefault(dialogue, []).append(float(similarity))

    def to_json(self) -> dict[str, Any]:
        """Return the summary's figures (None where nothing was measured)."""
        compared = self.stress_asked + self.stress_unasked
        turns = [value for values in self.dialogue_similarities.values() for value in values]
        return {
            "samples": self.samples,
            "rate_levels": dict(sorted(self.rate_levels.items())),
            "mean_rate_ratio": _mean(self.rate_ratios),
            "mean_phones_per_second": _mean(self.phones_per_second, 2),
            "stress_asked": self.stress_asked,
            "stress_found": self.stress_found,
            "stress_unasked": self.stress_unasked,
            "stress_unasked_clean": self.stress_unasked_clean,
            "stress_not_compared": self.stress_not_compared,
            "stress_agreement": round((self.stress_found + self.stress_unasked_clean) / compared, 3)
            if compared
            else None,
            "mean_pauses": _mean(self.pause_counts, 2),
            "mean_longest_pause_seconds": _mean(self.longest_pauses, 2),
            "dialogues_compared": len(self.dialogue_similarities),
            "mean_turn_speaker_similarity": _mean(turns),
            "lowest_turn_speaker_similarity": round(min(turns), 3) if turns else None,
            "turns_below_speaker_threshold": sum(value < DOUBTFUL_SIMILARITY for value in turns),
            "speaker_threshold": DOUBTFUL_SIMILARITY,
        }


def summary_rows(figures: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return a stored summary (`SpeechCheckSummary.to_json`) as the build page's (label, value) rows."""

    def shown(value: Any) -> str:
        return "—" if value is None else str(value)

    levels = figures.get("rate_levels") or {}
    asked, unasked = figures.get("stress_asked", 0), figures.get("stress_unasked", 0)
    return [
        ("Samples checked", shown(figures.get("samples"))),
        (
            "Speaking rate (slow / normal / fast)",
            f"{levels.get('low', 0)} / {levels.get('normal', 0)} / {levels.get('high', 0)}",
        ),
        ("Mean rate against the neutral reading (ratio)", shown(figures.get("mean_rate_ratio"))),
        ("Mean phones per second (speech only)", shown(figures.get("mean_phones_per_second"))),
        ("Asked-for stress heard", f"{figures.get('stress_found', 0)} of {asked}"),
        ("No stress asked, none heard", f"{figures.get('stress_unasked_clean', 0)} of {unasked}"),
        ("Stress agreement", shown(figures.get("stress_agreement"))),
        ("Mean pauses per query", shown(figures.get("mean_pauses"))),
        ("Mean longest pause (s)", shown(figures.get("mean_longest_pause_seconds"))),
        ("Dialogues compared for speaker consistency", shown(figures.get("dialogues_compared"))),
        ("Mean turn speaker similarity (cosine)", shown(figures.get("mean_turn_speaker_similarity"))),
        ("Lowest turn speaker similarity", shown(figures.get("lowest_turn_speaker_similarity"))),
        (
            f"Turns below {figures.get('speaker_threshold', DOUBTFUL_SIMILARITY)} (another voice?)",
            shown(figures.get("turns_below_speaker_threshold")),
        ),
    ]
