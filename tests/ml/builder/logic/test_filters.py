"""Filter verdicts and answer readers: drops carry the reason, malformed answers never raise."""

from __future__ import annotations

from annotation.labelling.schema import check_tom
from ml.builder.logic.filters import (
    Query,
    Reasoned,
    Verdict,
    query_verdict,
    read_query,
    read_reasoned,
    response_verdict,
    strategy_slugs,
)
from ml.builder.stages import QUERY_CRITERIA, RESPONSE_CRITERIA
from webapp.lib.output_format import parse_output, parse_reasoning_fields, parse_strategy_fields
from webapp.lib.vocabulary import DEFAULT_STRATEGIES


def _scores(criteria, **low):
    return {"scores": {**dict.fromkeys(criteria, 4), **low}, "reason": "why"}


def test_a_query_passing_every_criterion_is_kept() -> None:
    assert query_verdict(_scores(QUERY_CRITERIA), min_score=3) == Verdict(
        True, "", "why", dict.fromkeys(QUERY_CRITERIA, 4)
    )


def test_the_lowest_failing_criterion_names_the_drop() -> None:
    verdict = query_verdict(_scores(QUERY_CRITERIA, coherence=2, non_triviality=1), min_score=3)
    assert (verdict.kept, verdict.reason) == (False, "non_triviality")


def test_harmful_content_is_refused_whatever_the_scores() -> None:
    answer = {**_scores(QUERY_CRITERIA), "harmful": True, "harm_kind": "credible_threat"}
    assert query_verdict(answer, 3).reason == "credible_threat"
    assert query_verdict({**answer, "harm_kind": "weird"}, 3).reason == "other_harm"


def test_a_missing_or_out_of_range_score_is_a_format_drop() -> None:
    assert query_verdict({"scores": {"coherence": 4}}, 3).reason == "bad_format"
    assert response_verdict(_scores(RESPONSE_CRITERIA, style_consistent=9), 3).reason == "bad_format"
    assert response_verdict({"scores": "high"}, 3).reason == "bad_format"


def test_a_tighter_threshold_drops_what_a_looser_one_kept() -> None:
    answer = _scores(RESPONSE_CRITERIA, grounded_in_perception=3)
    assert response_verdict(answer, 3).kept
    assert response_verdict(answer, 4).reason == "grounded_in_perception"


def test_a_query_answer_needs_text() -> None:
    query = read_query({"query": "  I lost my job today.  ", "emotion_variant": "despair"})
    assert isinstance(query, Query) and query.text == "I lost my job today."
    assert isinstance(read_query({"query": ""}), Verdict)


def test_a_query_keeps_the_stressed_word_only_when_it_is_one_of_its_words() -> None:
    def stressed(word: object) -> str:
        query = read_query({"query": "Nobody called me back, NOBODY.", "stressed_word": word})
        assert isinstance(query, Query)
        return query.stressed_word

    assert stressed("nobody") == "Nobody"  # as the script writes it
    assert stressed(" CALLED ") == "called"
    assert stressed("body") == stressed("call me") == stressed("") == stressed(None) == stressed(7) == ""


REASONED = {
    "perception": "Slow, low voice.",
    "context": "She was left out.",
    "latent_need": "Belonging.",
    "core_demand": "Be heard.",
    "constraints": ["advice"],
    "recommended_strategies": ["validation", "questioning"],
    "not_recommended_strategies": ["information"],
    "speech_style": "Comforting",
    "response": "That hurts. Tell me more?",
}


def test_a_reasoned_answer_renders_the_output_format_the_ml_code_parses() -> None:
    reasoned = read_reasoned(REASONED)
    assert isinstance(reasoned, Reasoned)
    parsed = parse_output(reasoned.output)
    assert parsed.well_formed and parsed.reasoning and parsed.strategy
    assert parse_reasoning_fields(parsed.reasoning.text)["latent_need"] == "Belonging."
    strategy = parse_strategy_fields(parsed.strategy.text)
    assert (strategy.strategies, strategy.speech_style) == (["validation", "questioning"], "comforting")
    assert reasoned.tom["recommended_strategies"] == ["emotional-validation", "questioning"]
    assert reasoned.tom["not_recommended_strategies"] == ["information"]
    assert (
        check_tom(reasoned.tom, strategy_slugs={slug for slug, _ in DEFAULT_STRATEGIES}, complete=True) == []
    )
    assert reasoned.tom["constraints"] == ["advice"]


def test_a_reasoned_answer_missing_a_step_is_dropped_naming_it() -> None:
    verdict = read_reasoned({**REASONED, "latent_need": "", "speech_style": "shouting"})
    assert isinstance(verdict, Verdict)
    assert verdict.reason == "bad_format"
    assert "latent_need" in verdict.detail and "speech_style" in verdict.detail


def test_strategy_names_become_taxonomy_slugs() -> None:
    names = ["Validate feelings", "advice", "Reflection of feelings", "humour", "Advice"]
    assert strategy_slugs(names) == ["emotional-validation", "suggestions-guidance"]
