"""Prompts carry the sample's facts and history; their templates are fingerprinted for provenance."""

from __future__ import annotations

import json

from ml.builder.logic.prompts import Exchange, prompt_hashes, query_messages, response_messages
from ml.builder.stages import PROMPT_VARIANTS


def test_each_variant_has_its_own_instruction_and_fingerprint() -> None:
    hashes = prompt_hashes()
    assert {f"variant:{variant}" for variant in PROMPT_VARIANTS} <= set(hashes)
    texts = {
        json.loads(query_messages("B1-000001", "t", "sad", "low", variant)[1]["content"])["instruction"]
        for variant in PROMPT_VARIANTS
    }
    assert len(texts) == 6


def test_a_dialogue_turn_sees_the_earlier_turns() -> None:
    history = [Exchange(1, "I failed.", assistant="That hurts.")]
    facts = json.loads(
        response_messages(
            "B1-D00001.t2", "Still bad.", "Emotion: sad.", planned_strategy="reassurance", history=history
        )[1]["content"]
    )
    assert facts["history"] == [{"turn": 1, "user": "I failed.", "assistant": "That hurts."}]
    assert facts["planned_strategy"] == "reassurance"
    single = json.loads(query_messages("B1-000001", "t", "sad", "low", "standard")[1]["content"])
    assert "history" not in single and "turn" not in single


def test_two_samples_planned_alike_get_prompts_of_their_own() -> None:
    assert query_messages("B1-000001", "t", "sad", "low", "standard") != query_messages(
        "B1-000002", "t", "sad", "low", "standard"
    )
