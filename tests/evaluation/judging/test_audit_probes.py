"""The judge audit's pure probes and statistics (evaluation.judging.audit), checked by hand and scipy."""

from __future__ import annotations

import math

import pytest
from scipy import stats as scipy_stats

from evaluation.judging import audit
from evaluation.judging.heuristic import heuristic_answer, wrong_emotion_flags
from evaluation.judging.prompts import parse_judgement
from webapp.lib.vocabulary import EMOTIONS


def test_padding_adds_neutral_sentences_and_leaves_an_empty_reply_empty() -> None:
    padded = audit.pad_reply("I'm sorry.", sentences=2)
    assert padded == "I'm sorry. I am replying to what you said. This is my answer to you."
    assert audit.pad_reply("  ") == "  "


def test_fields_are_reversed_and_a_single_field_is_not_a_probe() -> None:
    assert audit.reorder_fields("Reasoning.\n\nStrategy: x") == "Strategy: x\n\nReasoning."
    assert audit.reorder_fields({"a": 1, "b": 2}) == {"b": 2, "a": 1}
    assert list(audit.reorder_fields({"a": 1, "b": 2, "audio_base64": "x"}) or {}) == [
        "b",
        "a",
        "audio_base64",
    ]
    assert audit.reorder_fields("One paragraph only.") is None
    assert audit.reorder_fields({"response_text": "hi", "audio_base64": "x"}) is None


def test_the_wrong_emotion_replaces_the_gold_one_or_is_stated() -> None:
    wrong = audit.wrong_emotion_for("sad", EMOTIONS)
    assert wrong is not None and wrong != "sad" and wrong in EMOTIONS
    assert (
        audit.with_wrong_emotion("The user sounds Sad and lonely.", "sad", "angry")
        == "The user sounds angry and lonely."
    )
    assert audit.with_wrong_emotion("Lonely.", "sad", "angry") == "Primary emotion: angry. Lonely."
    assert audit.wrong_emotion_for("wistful", EMOTIONS) is None


def test_the_heuristic_flags_a_perception_naming_only_another_emotion() -> None:
    gold = {"emotion": "sad", "situation": "eats alone"}
    assert wrong_emotion_flags("perception", "The user sounds angry.", gold) == ["wrong_primary_emotion"]
    assert wrong_emotion_flags("perception", "Sad, not angry.", gold) == []
    assert wrong_emotion_flags("perception", "Lonely.", gold) == []
    assert wrong_emotion_flags("reasoning", "angry", gold) == []
    answer = heuristic_answer("perception", "The user sounds angry.", gold)
    assert parse_judgement("perception", answer, None).final <= 5


def test_a_strategy_probe_recommends_the_given_strategy() -> None:
    shown, fields = audit.with_strategy("Context: alone\n\nStrategies: validation", "information")
    assert shown == "Context: alone\n\nStrategy: information" and fields["strategy"] == ["information"]
    shown, fields = audit.with_strategy({"context": "alone", "strategy": ["validation"]}, "information")
    assert shown == fields == {"context": "alone", "strategy": ["information"]}


def test_a_paired_difference_has_scipys_t_interval() -> None:
    pairs = [(0.5, 0.7), (0.4, 0.5), (0.6, 0.9), (0.2, 0.3)]
    figure = audit.paired_difference(pairs)
    differences = [b - a for a, b in pairs]
    low, high = scipy_stats.t.interval(
        0.95, len(differences) - 1, loc=sum(differences) / 4, scale=scipy_stats.sem(differences)
    )
    assert figure.estimate == pytest.approx(0.175)
    assert (figure.low, figure.high) == (pytest.approx(low), pytest.approx(high))
    assert figure.n == 4 and figure.excludes_zero
    assert not audit.paired_difference([(1.0, 1.0), (0.5, 0.5)]).excludes_zero
    assert audit.paired_difference([]).n == 0 and audit.paired_difference([(0.0, 1.0)]).low is None


def test_spread_and_cap_flips_are_counted_per_prompt() -> None:
    spread = audit.score_spread({1: [0.5, 0.5], 2: [0.2, 0.6], 3: [1.0]})
    assert spread.n == 2 and spread.estimate == pytest.approx(0.1)
    flips = audit.cap_flips({1: [True, False], 2: [False, False], 3: [True, True], 4: [True]})
    assert (flips.estimate, flips.n) == (pytest.approx(1 / 3), 3)
    assert flips.low is not None and flips.low < 1 / 3 < (flips.high or 0)
    hits = audit.cap_hits([(5.0, 5), (4.0, 5), (6.0, 5)])
    assert (hits.estimate, hits.n) == (pytest.approx(2 / 3), 3)


def test_alpha_of_a_single_value_says_why_it_is_missing() -> None:
    figure = audit.alpha_with_interval([[1.0, 1.0], [1.0, 1.0]])
    assert figure.estimate is None and figure.n == 2 and "distinct" in figure.note


def test_the_ensemble_answer_is_the_median_and_the_majority() -> None:
    answers = [
        {"subscores": {"content": 1}, "flags": ["harmful"]},
        {"subscores": {"content": 4}, "flags": ["harmful", "hard_failure"]},
        {"subscores": {"content": 5}, "flags": []},
    ]
    answer = audit.ensemble_answer(answers)
    assert answer["subscores"] == {"content": 4} and answer["flags"] == ["harmful"]
    assert audit.ensemble_answer(answers[:2])["subscores"] == {"content": 1}  # the lower median
    with pytest.raises(ValueError):
        audit.ensemble_answer([])


def test_the_interval_chart_places_estimate_and_interval_on_the_scale() -> None:
    figure = audit.Figure(0.5, 0.0, 1.0, 9).as_dict()
    chart = audit.interval_chart(
        [("a", figure), ("b", audit.Figure(None, None, None, 0).as_dict())], 0.0, 1.0
    )
    first, second = chart["rows"]
    assert (first["x"], first["x_low"], first["x_high"]) == (180.0, 0.0, 360.0)
    assert second["x"] is None and chart["x_zero"] == 0.0 and chart["height"] == 44
    assert math.isclose(
        audit.interval_chart([("c", audit.Figure(5.0, 2.0, 9.0, 3).as_dict())])["rows"][0]["x"], 360.0
    )


def test_only_a_difference_chart_marks_a_bias() -> None:
    shifted = audit.Figure(0.4, 0.3, 0.5, 6).as_dict()
    assert audit.interval_chart([("padded", shifted)], differences=True)["rows"][0]["bias"]
    assert not audit.interval_chart([("caps hit", shifted)], 0.0, 1.0)["rows"][0]["bias"]
