"""A take's words and perception labels as TextGrid/EAF tiers, and tiers back as a draft (pure).

Four tiers, each an interval tier over the take (seconds from its start):

- ``words``: the forced alignment's words (`annotation.audio.speech.alignment`), one interval each;
- ``stressed``: the stressed words, each on its aligned word's interval, labelled as the labels
  name it (a stressed word the alignment lacks has no place and is left out);
- ``intonation``: one interval over the speech (first word to last), labelled with the contour;
- ``emotion``: the emotion-shift segments, labelled with their emotion.

Read back, the same tiers become a perception draft (stressed words, intonation, emotion segments
with the words they cover) plus the word timings; a tier of another name, a label outside the
vocabulary, or a region outside the take cannot be placed and is refused with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotation.audio.speech.tiers import Interval, Tier, TierFileError, TierSet
from webapp.lib.vocabulary import EMOTIONS, INTONATIONS

WORDS, STRESSED, INTONATION, EMOTION = "words", "stressed", "intonation", "emotion"
TIER_NAMES = (WORDS, STRESSED, INTONATION, EMOTION)
# A region may end this far past the take (rounding of another tool's clock), never more.
EDGE_SECONDS = 0.0015


def _key(word: str) -> str:
    return word.strip(".,!?;:\"'()").casefold()


def take_tiers(duration: float, words: Sequence[Interval], perception: Mapping[str, Any]) -> TierSet:
    """Return a take's tiers: its aligned `words` and the labels of `perception` placed on them."""
    stressed: list[Interval] = []
    cursor = 0
    for wanted in perception.get("stressed_words") or []:
        for index in range(cursor, len(words)):
            if _key(words[index].label) == _key(str(wanted)):
                stressed.append(Interval(words[index].start, words[index].end, str(wanted)))
                cursor = index + 1
                break
    intonation: list[Interval] = []
    if perception.get("intonation"):
        span = (words[0].start, words[-1].end) if words else (0.0, duration)
        intonation.append(Interval(span[0], span[1], str(perception["intonation"])))
    emotion = [
        Interval(float(segment["start"]), float(segment["end"]), str(segment.get("emotion") or ""))
        for segment in perception.get("emotion_segments") or []
        if segment.get("emotion")
    ]
    return TierSet(
        duration,
        (
            Tier(WORDS, tuple(words)),
            Tier(STRESSED, tuple(stressed)),
            Tier(INTONATION, tuple(intonation)),
            Tier(EMOTION, tuple(emotion)),
        ),
    )


@dataclass(frozen=True)
class TierDraft:
    """What a tier file says about a take: the perception fields it labels, and its word timings."""

    perception: dict[str, Any]
    words: list[dict[str, Any]]  # [{"text", "start", "end"}]


def draft_from_tiers(tiers: TierSet, take_seconds: float) -> TierDraft:
    """Return the draft a tier file makes; raise TierFileError for a tier it cannot place."""
    for tier in tiers.tiers:
        if tier.name not in TIER_NAMES:
            raise TierFileError(
                f"tier {tier.name!r} cannot be placed: the tiers read are {', '.join(TIER_NAMES)}"
            )
        for interval in tier.intervals:
            if interval.start < -EDGE_SECONDS or interval.end > take_seconds + EDGE_SECONDS:
                raise TierFileError(
                    f"tier {tier.name!r}: {interval.label!r} at {interval.start:.3f}-{interval.end:.3f} s "
                    f"lies outside the take ({take_seconds:.3f} s)"
                )
    words = _intervals(tiers, WORDS)
    perception: dict[str, Any] = {}
    if (stressed := _intervals(tiers, STRESSED)) or tiers.tier(STRESSED) is not None:
        perception["stressed_words"] = [interval.label.strip() for interval in stressed]
    contours = _intervals(tiers, INTONATION)
    if len(contours) > 1:
        raise TierFileError(f"tier 'intonation' holds {len(contours)} intervals: a take has one contour")
    if contours:
        perception["intonation"] = _in_vocabulary(INTONATION, contours[0], INTONATIONS)
    if tiers.tier(EMOTION) is not None:
        perception["emotion_segments"] = [
            {
                "start": interval.start,
                "end": interval.end,
                "emotion": _in_vocabulary(EMOTION, interval, EMOTIONS),
                "words": " ".join(
                    word.label
                    for word in words
                    if word.start >= interval.start - EDGE_SECONDS and word.end <= interval.end + EDGE_SECONDS
                ),
            }
            for interval in _intervals(tiers, EMOTION)
        ]
    return TierDraft(
        perception,
        [{"text": word.label, "start": word.start, "end": word.end} for word in words],
    )


def _intervals(tiers: TierSet, name: str) -> list[Interval]:
    tier = tiers.tier(name)
    return sorted(tier.intervals, key=lambda interval: interval.start) if tier else []


def _in_vocabulary(tier: str, interval: Interval, vocabulary: Sequence[str]) -> str:
    label = interval.label.strip().casefold()
    if label not in vocabulary:
        raise TierFileError(
            f"tier {tier!r}: {interval.label!r} at {interval.start:.3f} s is not one of {', '.join(vocabulary)}"
        )
    return label
