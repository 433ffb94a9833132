"""The offline heuristic judge: rubric-shaped answers from word overlap with the gold reference.

It lets a new installation (and the demo) run judge runs and fill the leaderboard without any
model or endpoint. It is not a judge: it does not read for meaning, so its numbers only show how
the app works. Its answers have the shape an LLM judge's have (sub-scores, flags, rationale), and
go through the same rubric checks and caps (`evaluation.judging.prompts.parse_judgement`), so
everything downstream treats them alike. It does not listen, so it never scores response audio.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evaluation.judging.rubrics import PERCEPTION, SUBSCORE_RANGES
from webapp.lib.vocabulary import EMOTIONS

OFFLINE_HEURISTIC_MODEL = "offline word-overlap heuristic"
DEMO_JUDGE_NAME = "Offline heuristic (demo only, not a real judge)"

_WORD = re.compile(r"[a-z0-9']+")
# Words too common to say anything about whether an output matches its reference.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "with",
        "you",
        "your",
    ]
)


def _text_of(value: object) -> str:
    """Return every string inside a value (mappings and lists flattened), joined by spaces."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return " ".join(_text_of(item) for item in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return " ".join(_text_of(item) for item in value)
    return ""


def _content_words(text: str) -> set[str]:
    # Slugs such as "emotional-validation" count as their words, as a model would write them.
    return {word for word in _WORD.findall(text.lower().replace("-", " ")) if word not in _STOPWORDS}


def reference_coverage(shown: object, gold: Mapping[str, Any]) -> float:
    """Return the share of the gold reference's content words that the output uses (0 to 1).

    The user's own words are left out of the reference: repeating them shows no understanding.
    """
    said = _content_words(str(gold.get("user_utterance", "")))
    reference = _content_words(_text_of({k: v for k, v in gold.items() if k != "user_utterance"})) - said
    if not reference:
        return 0.0
    return len(reference & _content_words(_text_of(shown))) / len(reference)


def heuristic_answer(stage: str, shown: object, gold: Mapping[str, Any]) -> dict[str, Any]:
    """Return a judge answer for one stage: every sub-score placed in its range by the coverage."""
    coverage = reference_coverage(shown, gold)
    subscores = {
        name: low + round((high - low) * coverage) for name, (low, high) in SUBSCORE_RANGES[stage].items()
    }
    return {
        "subscores": subscores,
        "flags": wrong_emotion_flags(stage, shown, gold),
        "rationale": f"Offline heuristic, not a judge: the output uses {coverage:.0%} of the gold "
        "reference's words.",
    }


def wrong_emotion_flags(stage: str, shown: object, gold: Mapping[str, Any]) -> list[str]:
    """Return ["wrong_primary_emotion"] for a perception that names another primary emotion of the
    vocabulary and never the gold one (the one flag word matching can decide), else []."""
    gold_emotion = str(gold.get("emotion", "")).lower()
    if stage != PERCEPTION or gold_emotion not in EMOTIONS:
        return []
    named = _content_words(_text_of(shown)) & set(EMOTIONS)
    return ["wrong_primary_emotion"] if named and gold_emotion not in named else []
