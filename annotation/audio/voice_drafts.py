"""Measured drafts of the speaker's gender and the emotion's intensity (paper B.3), never facts.

The paper's automatic annotation labels gender and emotion intensity with models; no wheel this
project installs ships one, so both are documented heuristics over what the acoustic analysis and
the aligner measure, and the workbench shows each as "analysis suggests" with its accuracy on the
bench set beside it (`DRAFT_ACCURACY`, from bench/drafts_accuracy.py; docs/benchmarks.md). A
draft fills only a field the person left empty and is never stored as their label.

- Gender: the median f0 against GENDER_SPLIT_HZ. Adult male speech centres about 85-155 Hz, female
  about 165-255 Hz; a raised or very low voice crosses the line, which the measured accuracy counts.
- Intensity: how far the take's delivery lies from the same speaker's usual one. Each arousal cue
  is a z-score against the speaker's other takes (their median and spread); the mean of the cues,
  signed so that raised is positive, is the take's arousal, and intensity is its size: a strong
  emotion moves a delivery far from usual, whether up (anger, fear, joy) or down (sadness). Below
  INTENSITY_EDGES[0] low, above [1] high. With fewer than MIN_TAKES_FOR_LEVELS other takes there
  is no usual delivery to compare with, and no draft.
  The cues are the median pitch (semitones) and the articulation rate (log phones per second of
  speech): both are measured per voiced frame or per phone, so the words of a script move them
  little. Pitch range, loudness and spectral tilt rise with arousal too, but they move with the
  script (its vowels, fricatives and sentence length) at least as much: on the bench set, adding
  them took held-out accuracy from 0.59 to 0.27 (`ALL_CUES`; bench/drafts_accuracy.py prints
  both). That choice was made after seeing both of the bench's splits, so its accuracy is an
  optimistic figure; the edges were tuned on the tuning sentences alone.

Pure: stored measurements in, vocabulary values out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from annotation.audio.prosody import MIN_TAKES_FOR_LEVELS
from annotation.audio.speech.rate import RATE_KEY
from webapp.lib.vocabulary import FEMALE, HIGH, LOW, MALE, MEDIUM

GENDER_SPLIT_HZ = 165.0
INTENSITY_EDGES = (0.3, 0.65)
# Accuracy on the bench set's held-out sentences (bench/drafts_accuracy.py, whose saved output
# tests/annotation/audio/test_voice_drafts.py holds these to).
DRAFT_ACCURACY: dict[str, float] = {"intensity": 0.594, "gender": 0.948}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _semitones(value: object) -> float | None:
    hz = _number(value)
    return 12.0 * math.log2(hz) if hz and hz > 0 else None


def _log_rate(value: object) -> float | None:
    rate = _number(value)
    return math.log(rate) if rate and rate > 0 else None


# (stored feature, how it is read) for each arousal cue; every one rises with arousal.
ALL_CUES: tuple[tuple[str, Callable[[object], float | None]], ...] = (
    ("median_f0_hz", _semitones),
    ("f0_range_semitones", _number),
    ("integrated_loudness_lufs", _number),
    ("spectral_tilt_db", _number),
    (RATE_KEY, _log_rate),
)
# The cues intensity is drafted from (see the module docstring for why not all of them).
AROUSAL_CUES = tuple(cue for cue in ALL_CUES if cue[0] in ("median_f0_hz", RATE_KEY))


def gender_draft(features: Mapping[str, Any]) -> str | None:
    """Return "female" or "male" from the take's median f0 (None when it has no voiced speech)."""
    f0 = _number(features.get("median_f0_hz"))
    if f0 is None or f0 <= 0:
        return None
    return FEMALE if f0 >= GENDER_SPLIT_HZ else MALE


def arousal_against(
    features: Mapping[str, Any],
    others: Sequence[Mapping[str, Any]],
    cues: Sequence[tuple[str, Callable[[object], float | None]]] = AROUSAL_CUES,
) -> float | None:
    """Return the mean z-score of the take's arousal `cues` against the speaker's other takes
    (their median and standard deviation); a cue counts when the take and MIN_TAKES_FOR_LEVELS
    others have it and the others vary. None when no cue counts."""
    scores = []
    for name, read in cues:
        value = read(features.get(name))
        known = [v for v in (read(other.get(name)) for other in others) if v is not None]
        if value is None or len(known) < MIN_TAKES_FOR_LEVELS:
            continue
        spread = float(np.std(known, ddof=1))
        if spread > 0:
            scores.append((value - float(np.median(known))) / spread)
    return float(np.mean(scores)) if scores else None


def intensity_draft(
    features: Mapping[str, Any],
    others: Sequence[Mapping[str, Any]],
    edges: tuple[float, float] = INTENSITY_EDGES,
) -> str | None:
    """Return low, medium or high: how far the take's arousal lies from the speaker's usual."""
    return intensity_from_arousal(arousal_against(features, others), edges)


def intensity_from_arousal(arousal: float | None, edges: tuple[float, float] = INTENSITY_EDGES) -> str | None:
    """Return low, medium or high by the size of the arousal (`arousal_against`); None without it."""
    if arousal is None:
        return None
    size = abs(arousal)
    return LOW if size < edges[0] else HIGH if size > edges[1] else MEDIUM


def voice_drafts(features: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the drafts stored with a take's features: {"intensity_draft", "gender_draft"}."""
    return {"intensity_draft": intensity_draft(features, others), "gender_draft": gender_draft(features)}
