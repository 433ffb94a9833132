"""The output-format parser: spans, offsets, problems, token ranges and the field readers."""

from __future__ import annotations

import pytest

from ml.core.speech.tiny import build_tiny_tokenizer
from webapp.lib.output_format import (
    Span,
    format_reward,
    parse_output,
    parse_reasoning_fields,
    parse_strategy_fields,
    parse_strategy_names,
    render_output,
    token_spans,
)

COMPACT = (
    "<think><perception>sad</perception><reasoning>Context: job</reasoning>"
    "<strategy>Strategies: comfort</strategy></think><response>I am here.</response>"
)


def test_well_formed_output_has_exact_character_offsets() -> None:
    parsed = parse_output(COMPACT)

    assert parsed.well_formed
    assert parsed.problems == []
    assert parsed.perception == Span(19, 22, "sad")
    assert parsed.reasoning == Span(46, 58, "Context: job")
    assert parsed.strategy == Span(80, 99, "Strategies: comfort")
    assert parsed.response == Span(128, 138, "I am here.")
    assert format_reward(parsed) == 1.0


def test_rendered_output_round_trips_and_trims_whitespace() -> None:
    text = render_output("  sad  ", "Context: job", "Strategies: comfort", "I am here.\n")
    parsed = parse_output(text)

    assert parsed.well_formed
    assert {name: span.text for name, span in parsed.spans().items()} == {
        "perception": "sad",
        "reasoning": "Context: job",
        "strategy": "Strategies: comfort",
        "response": "I am here.",
    }
    for span in parsed.spans().values():
        assert text[span.start : span.end] == span.text


def test_response_may_be_plain_text_after_think() -> None:
    text = COMPACT.split("<response>")[0] + "\n I am here. "
    parsed = parse_output(text)

    assert parsed.well_formed
    assert parsed.response == Span(text.index("I am"), text.index("I am") + 10, "I am here.")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (COMPACT.replace("<strategy>Strategies: comfort</strategy>", ""), "missing <strategy>"),
        (COMPACT.replace("</reasoning>", ""), "missing </reasoning>"),
        (COMPACT.replace("</response>", ""), "missing </response>"),
        (COMPACT.split("<response>")[0], "missing response"),
        (
            COMPACT.replace("<perception>sad</perception><reasoning>Context: job</reasoning>", "").replace(
                "<think>", "<think><reasoning>Context: job</reasoning><perception>sad</perception>"
            ),
            "wrong tag order",
        ),
        (
            COMPACT.replace(
                "<response>I am here.</response>", "<response>a</response><response>b</response>"
            ),
            "duplicate <response>",
        ),
        (COMPACT.replace("<perception>sad</perception>", "<perception>  </perception>"), "empty perception"),
        ("Sure! " + COMPACT, "text outside spans"),
        (COMPACT.replace("</strategy></think>", "</strategy> stray </think>"), "text outside spans"),
    ],
)
def test_each_malformation_is_reported(text: str, problem: str) -> None:
    parsed = parse_output(text)

    assert problem in parsed.problems
    assert not parsed.well_formed
    assert format_reward(parsed) == 0.0


def test_wrongly_ordered_spans_are_still_extracted_for_judging() -> None:
    text = "<think><reasoning>r</reasoning><perception>p</perception><strategy>s</strategy></think>x"
    parsed = parse_output(text)

    assert parsed.problems == ["wrong tag order"]
    assert (parsed.perception, parsed.reasoning) == (Span(43, 44, "p"), Span(18, 19, "r"))


def test_output_without_tags_is_all_response() -> None:
    parsed = parse_output("  I am sorry to hear that. ")

    assert parsed.response == Span(2, 26, "I am sorry to hear that.")
    assert parsed.perception is None
    assert "missing <think>" in parsed.problems


def test_token_spans_from_an_offset_mapping() -> None:
    parsed = parse_output(COMPACT)
    # One token per tag, "sad" as one token, then the rest split by hand.
    offsets = [(0, 7), (7, 19), (19, 22), (22, 35), (35, 46), (46, 54), (54, 58), (58, 70), (0, 0)]

    assert token_spans(parsed, offsets) == {"perception": (2, 3), "reasoning": (5, 7)}


def test_token_spans_shift_by_the_character_offset_of_the_parsed_text() -> None:
    parsed = parse_output(COMPACT)
    offsets = [(0, 5), (5, 12), (12, 24), (24, 27), (27, 40)]  # a 5-character prefix, then COMPACT

    assert token_spans(parsed, offsets, char_offset=5) == {"perception": (3, 4)}


def test_token_spans_with_a_real_tokenizer_cover_exactly_the_span_text() -> None:
    tokenizer = build_tiny_tokenizer()
    text = render_output(
        "trembling voice, sad", "Context: job\nLatent need: comfort", "Strategies: calm", "I hear you."
    )
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    parsed = parse_output(text)

    ranges = token_spans(parsed, encoded["offset_mapping"])

    assert list(ranges) == ["perception", "reasoning", "strategy", "response"]
    for name, (start, end) in ranges.items():
        assert tokenizer.decode(encoded["input_ids"][start:end]).strip() == parsed.spans()[name].text


def test_reasoning_fields_are_read_case_insensitively_with_continuations() -> None:
    reasoning = (
        "context: lost job\nLatent need: reassurance,\n  and company\n- Core demand: be heard\nOther: x"
    )

    assert parse_reasoning_fields(reasoning) == {
        "context": "lost job",
        "latent_need": "reassurance, and company",
        "core_demand": "be heard",
    }


def test_strategy_names_and_speech_style() -> None:
    fields = parse_strategy_fields(
        "Strategies: Emotional Validation; Affirmation and Reassurance, reframing.\nSpeech style: Calm"
    )

    assert fields.strategies == ["emotional validation", "affirmation and reassurance", "reframing"]
    assert fields.speech_style == "calm"
    assert parse_strategy_names("- Question\n- Self-disclosure") == ["question", "self-disclosure"]
    assert parse_strategy_names("Strategies:\n1. Reflection of feelings\n2. Information") == [
        "reflection of feelings",
        "information",
    ]
