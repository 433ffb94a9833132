"""What the LLM answers mean: a query, a filter verdict, a reasoning trace turned into the output format.

Each reader takes the JSON object an LLM answered (``JudgeReply.data``) and returns either the
value or a ``Verdict`` that drops the sample with a stored reason; a malformed answer is a drop
with reason ``bad_format``, never an exception, so one bad answer cannot stop a stage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.audio.acoustics import WORD
from evaluation.judging.rubrics import normalise_strategy
from ml.builder.stages import (
    BAD_FORMAT,
    HARMFUL_REASONS,
    QUERY_CRITERIA,
    RESPONSE_CRITERIA,
)
from webapp.lib.output_format import (
    SPEECH_STYLES,
    parse_output,
    render_output,
    render_reasoning,
    render_strategy,
)


@dataclass(frozen=True)
class Verdict:
    kept: bool
    reason: str = ""  # why it was dropped ("" when kept)
    detail: str = ""
    scores: dict[str, int] = field(default_factory=dict)


def _scores(data: Mapping[str, Any], criteria: Sequence[str]) -> dict[str, int] | None:
    raw = data.get("scores")
    if not isinstance(raw, Mapping):
        return None
    scores: dict[str, int] = {}
    for criterion in criteria:
        value = raw.get(criterion)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 5:
            return None
        scores[criterion] = int(value)
    return scores


def _scored_verdict(data: Mapping[str, Any], criteria: Sequence[str], min_score: int) -> Verdict:
    scores = _scores(data, criteria)
    if scores is None:
        return Verdict(False, BAD_FORMAT, f"expected a 1-5 score for each of {', '.join(criteria)}")
    detail = str(data.get("reason") or "")[:2000]
    failing = [criterion for criterion in criteria if scores[criterion] < min_score]
    if failing:
        # The lowest-scoring criterion names the drop; ties go to the paper's order.
        worst = min(failing, key=lambda criterion: scores[criterion])
        return Verdict(False, worst, detail, scores)
    return Verdict(True, "", detail, scores)


def query_verdict(data: Mapping[str, Any], min_score: int) -> Verdict:
    """Return whether a query passes the five criteria and the harmful-content refusal."""
    if data.get("harmful") is True:
        kind = str(data.get("harm_kind") or "")
        reason = kind if kind in HARMFUL_REASONS else "other_harm"
        return Verdict(False, reason, str(data.get("reason") or "")[:2000])
    return _scored_verdict(data, QUERY_CRITERIA, min_score)


def response_verdict(data: Mapping[str, Any], min_score: int) -> Verdict:
    """Return whether a reasoning trace and reply pass the quality filter."""
    return _scored_verdict(data, RESPONSE_CRITERIA, min_score)


@dataclass(frozen=True)
class Query:
    text: str
    emotion_variant: str
    stressed_word: str = ""  # a word of the text, as written there; "" when the LLM named none


def read_query(data: Mapping[str, Any]) -> Query | Verdict:
    """Return the query an LLM wrote, or a drop when it wrote none."""
    text = str(data.get("query") or "").strip()
    if not text or len(text) > 1000:
        return Verdict(False, BAD_FORMAT, "the answer has no usable query (empty or over 1000 characters)")
    return Query(
        text=text,
        emotion_variant=str(data.get("emotion_variant") or "").strip()[:64],
        stressed_word=_word_of(text, data.get("stressed_word")),
    )


def _word_of(text: str, named: object) -> str:
    """Return the word of `text` an LLM named (any case), as the text writes it; "" for anything
    else. Stress is optional: a word the query does not hold is left out, not a reason to drop."""
    wanted = str(named or "").strip().lower()
    return next((word for word in WORD.findall(text) if word.lower() == wanted), "") if wanted else ""


# The benchmark's strategy classes (``STRATEGY_SYNONYMS``) as slugs of the seeded taxonomy, so a
# built sample's ToM document holds slugs like a gold reference does.
SLUG_OF_STRATEGY_CLASS: dict[str, str] = {
    "emotional_validation": "emotional-validation",
    "reassurance": "reassurance",
    "guidance": "suggestions-guidance",
    "cognitive_reframing": "cognitive-reframing",
    "active_listening": "restatement",
    "questioning": "questioning",
    "information": "information",
    "self_disclosure": "self-disclosure",
}


def strategy_slugs(names: Sequence[str]) -> list[str]:
    """Return the taxonomy slugs of free-text strategy names, in order, once each; others are left out."""
    slugs = (SLUG_OF_STRATEGY_CLASS.get(normalise_strategy(name)) for name in names)
    return list(dict.fromkeys(slug for slug in slugs if slug))


@dataclass(frozen=True)
class Reasoned:
    """A reasoning trace and reply: the ToM label document, strategies, style and the rendered output."""

    perception: str
    tom: dict[str, Any]
    strategies: tuple[str, ...]
    speech_style: str
    response: str
    output: str


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(entry).strip() for entry in value if str(entry).strip()]


def read_reasoned(data: Mapping[str, Any]) -> Reasoned | Verdict:
    """Return the reasoning and reply in EchoChat's output format, or a drop naming what is missing."""
    fields = {name: str(data.get(name) or "").strip() for name in ("perception", "context", "latent_need")}
    fields["core_demand"] = str(data.get("core_demand") or "").strip()
    response = str(data.get("response") or "").strip()
    strategies = tuple(_texts(data.get("recommended_strategies")))
    style = str(data.get("speech_style") or "").strip().lower()
    missing = [name for name, value in fields.items() if not value]
    missing += [
        name for name, value in (("response", response), ("recommended_strategies", strategies)) if not value
    ]
    if style not in SPEECH_STYLES:
        missing.append("speech_style")
    if missing:
        return Verdict(False, BAD_FORMAT, f"missing or invalid: {', '.join(missing)}")
    constraints = _texts(data.get("constraints"))
    tom: dict[str, Any] = {
        "context": fields["context"],
        "latent_need": fields["latent_need"],
        "core_demand": fields["core_demand"],
        "recommended_strategies": strategy_slugs(strategies),
        "not_recommended_strategies": [
            slug
            for slug in strategy_slugs(_texts(data.get("not_recommended_strategies")))
            if slug not in strategy_slugs(strategies)
        ],
        "constraints": constraints,
    }
    reasoning = render_reasoning(
        context=fields["context"],
        latent_need=fields["latent_need"],
        core_demand=fields["core_demand"],
        constraints="; ".join(f"avoid {entry}" for entry in constraints) or "none",
    )
    output = render_output(fields["perception"], reasoning, render_strategy(strategies, style), response)
    if not parse_output(output).well_formed:
        return Verdict(False, BAD_FORMAT, "the reasoning does not render to a well-formed output")
    return Reasoned(fields["perception"], tom, strategies, style, response, output)
