"""The shipped taxonomy and its JSONL reading."""

from __future__ import annotations

import pytest

from evaluation.echomind.taxonomy import DEFAULT_TAXONOMY, conversation_prompt, parse_taxonomy_jsonl, to_jsonl


def test_the_default_is_echomind_s_45_attributes_in_12_fine_dimensions() -> None:
    assert len(DEFAULT_TAXONOMY) == 45
    assert len({a.fine for a in DEFAULT_TAXONOMY}) == 12
    assert {a.coarse for a in DEFAULT_TAXONOMY} == {"speaker", "paralinguistic", "environment"}
    assert [a.code for a in DEFAULT_TAXONOMY if a.fine == "volume"] == ["shouting", "whispering"]


def test_jsonl_round_trips_and_bad_lines_are_named() -> None:
    attributes, problems = parse_taxonomy_jsonl(to_jsonl(DEFAULT_TAXONOMY).splitlines())
    assert (tuple(attributes), problems) == (DEFAULT_TAXONOMY, [])
    lines = [
        '{"code": "purr", "label": "Purring", "coarse": "paralinguistic", "fine": "non-verbal"}',
        '{"code": "purr", "label": "Purring", "coarse": "paralinguistic", "fine": "non-verbal"}',
        '{"code": "Bad Code", "label": "x", "coarse": "speaker", "fine": "age"}',
        '{"code": "hum", "label": "Hum", "coarse": "music", "fine": "x"}',
        "not json",
    ]
    attributes, problems = parse_taxonomy_jsonl(lines)
    assert [a.code for a in attributes] == ["purr"]
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 3", "line 4", "line 5"]


def test_reply_prompts_grow_with_their_strength_and_the_enhanced_one_names_the_dimension() -> None:
    none, basic = conversation_prompt("none", "speaker"), conversation_prompt("basic", "speaker")
    assert basic.startswith(none) and len(basic) > len(none)
    assert "the sounds around them" in conversation_prompt("enhanced", "environment")
    with pytest.raises(ValueError, match="unknown prompt strength"):
        conversation_prompt("shouted", "speaker")
