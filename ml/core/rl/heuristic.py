"""A deterministic RL scorer for tests, the demo, and runs without a judge or reward model."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ml.core.rl.rollouts import StageScores
from webapp.lib.output_format import ParsedOutput, parse_strategy_fields


@dataclass(frozen=True)
class HeuristicReference:
    """What a rollout for one item is compared with (gold perception and reasoning text, the
    recommended strategies, the reference response, the fitting speech style)."""

    perception: str
    reasoning: str
    strategies: tuple[str, ...]
    response: str
    speech_style: str | None = None


_WORD = re.compile(r"[a-z0-9']+")


def word_f1(candidate: str, reference: str) -> float:
    """Return the F1 of the word multisets of two texts (lower-cased; 0 when either is empty)."""
    candidate_words = Counter(_WORD.findall(candidate.lower()))
    reference_words = Counter(_WORD.findall(reference.lower()))
    overlap = sum((candidate_words & reference_words).values())
    if not overlap:
        return 0.0
    precision = overlap / sum(candidate_words.values())
    recall = overlap / sum(reference_words.values())
    return 2 * precision * recall / (precision + recall)


class HeuristicScorer:
    """A stand-in for the judge and reward model that needs no server or trained weights.

    s1 and s2 are word F1 against the gold perception and reasoning; s3 is the Jaccard overlap of
    the strategy names with the recommended ones; content is 5 x word F1 against the reference
    response; alignment is 1 when the declared speech style is the fitting one (0.5 when no
    fitting style is known). Items without a reference score 0 everywhere.
    """

    def __init__(self, references: Mapping[str, HeuristicReference]) -> None:
        self.references = dict(references)

    def __call__(self, item_id: str, parsed: ParsedOutput) -> StageScores:
        reference = self.references.get(item_id)
        if reference is None:
            return StageScores(0.0, 0.0, 0.0, 0.0, 0.0)
        strategy = parse_strategy_fields(parsed.span_text("strategy"))
        wanted = {" ".join(name.lower().split()) for name in reference.strategies}
        chosen = set(strategy.strategies)
        union = wanted | chosen
        if reference.speech_style is None:
            alignment = 0.5
        else:
            alignment = 1.0 if strategy.speech_style == reference.speech_style.strip().lower() else 0.0
        return StageScores(
            perception=word_f1(parsed.span_text("perception"), reference.perception),
            reasoning=word_f1(parsed.span_text("reasoning"), reference.reasoning),
            strategy=len(wanted & chosen) / len(union) if union else 0.0,
            content=5.0 * word_f1(parsed.span_text("response"), reference.response),
            audio_alignment=alignment,
        )
