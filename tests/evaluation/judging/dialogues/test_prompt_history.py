"""Judge prompts of dialogue turns carry the conversation before them; single items' prompts do not change."""

from __future__ import annotations

import hashlib
import json

import pytest

from evaluation.judging.dialogues.history import (
    DialogueHistory,
    EarlierTurn,
    choose_reply,
    perception_summary,
)
from evaluation.judging.prompts import build_messages, prompt_version
from evaluation.judging.rubrics import STAGES

GOLD = {"user_utterance": "I ate alone again.", "emotion": "sad", "intensity": "medium"}

# sha256 of each stage's messages for one single item, computed before dialogue judging existed:
# a single item's prompt (and so its judge cache key) must never change with dialogues. The
# reasoning digests are those of reasoning-v2 (its flags split by part, a wording change that
# bumped the version, so stored v1 judgements are told apart).
SINGLE_ITEM_PROMPTS = {
    ("perception", "implicit"): "1e50925ac9e717a916ca59f0befbc4103a3b9e8aec0f37b7bf91236141470f84",
    ("perception", "modality-conflict"): "d9f454de0c24ded1cf23ada754ebe03b907cbacd6bea295148ef7f3c60fb1fe6",
    ("reasoning", "implicit"): "5acf6ff78cacdd29a1e8d8e27091ec79d4374198ff4035c6717cea60ca25905c",
    ("reasoning", "modality-conflict"): "bc161b3bc87ed844b6f4dd1009032332040cfaa127fc15c933e02182c6aa6083",
    ("shift_perception", "implicit"): "9bc3d64ac381d84034fcc15a75f49823caa3b1f944f05fc4041e471babfd1727",
    (
        "shift_perception",
        "modality-conflict",
    ): "52072d192c295d266b3bd49f18b330916eefcd15752c3ecf942cd9c986c0914f",
    ("response_content", "implicit"): "f6ea58d762e8f02ee414329d573641bd5be8bfb89c9c7cc188867f214b389504",
    (
        "response_content",
        "modality-conflict",
    ): "db8aaff5daec494af96cdeaf9154212427f7deca17d913ecd2219b3fcc158362",
    ("response_audio", "implicit"): "3268745b953952de122bf1f7e0068d3c5b9c1e7d5f52bc833059ac90d9c23852",
    (
        "response_audio",
        "modality-conflict",
    ): "198392b6028eedca80de7626d4b155cfbf0d01aa184f019b503dffa3956987cf",
}

HISTORY = DialogueHistory(
    turn=3,
    earlier=(
        EarlierTurn(
            1, "I lost my job today.", {"emotion": "sad", "intensity": "high"}, "I'm so sorry.", "own"
        ),
        EarlierTurn(2, "What if I never find one?", None, "That fear makes sense.", "reference"),
    ),
)


def _digest(messages: list[dict]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize(("stage", "scenario"), sorted(SINGLE_ITEM_PROMPTS))
def test_a_single_items_prompt_is_byte_identical_to_before_dialogues(stage: str, scenario: str) -> None:
    messages = build_messages(stage, "She sounds sad.", GOLD, scenario)
    assert _digest(messages) == SINGLE_ITEM_PROMPTS[(stage, scenario)]
    assert build_messages(stage, "She sounds sad.", GOLD, scenario, None) == messages


def test_a_turns_prompt_names_the_judged_turn_and_carries_the_conversation_in_order() -> None:
    user = build_messages("reasoning", "Fear of the future.", GOLD, "implicit", HISTORY)[1]["content"]
    assert "This utterance is turn 3 of a spoken dialogue. Judge only the model output for turn 3" in user
    conversation = user[user.index("Conversation so far:") : user.index("Reference annotation:")]
    assert conversation.splitlines() == [
        "Conversation so far:",
        "Turn 1",
        "User: I lost my job today.",
        "Reference perception of the user: emotion: sad; intensity: high",
        "Assistant (the judged model's own reply): I'm so sorry.",
        "Turn 2",
        "User: What if I never find one?",
        "Reference perception of the user: not annotated yet",
        "Assistant (reference reply; the model has no output for this turn): That fear makes sense.",
        "",
    ]
    assert user.endswith("Model output:\nFear of the future.")


@pytest.mark.parametrize("stage", ["perception", "shift_perception", "reasoning"])
def test_understanding_stages_read_the_earlier_perception(stage: str) -> None:
    user = build_messages(stage, "x", GOLD, "implicit", HISTORY)[1]["content"]
    assert "Reference perception of the user: emotion: sad; intensity: high" in user


@pytest.mark.parametrize("stage", ["response_content", "response_audio"])
def test_response_stages_read_the_conversation_without_perception(stage: str) -> None:
    user = build_messages(stage, "x", GOLD, "implicit", HISTORY)[1]["content"]
    assert "User: What if I never find one?" in user and "I'm so sorry." in user
    assert "Reference perception" not in user


def test_the_first_turn_is_named_with_no_conversation_before_it() -> None:
    user = build_messages("perception", "x", GOLD, "implicit", DialogueHistory(1, ()))[1]["content"]
    assert "turn 1 of a spoken dialogue" in user and "Conversation so far" not in user


def test_every_stage_with_history_differs_from_the_single_prompt_only_in_the_user_message() -> None:
    for stage in STAGES:
        single = build_messages(stage, "x", GOLD, "implicit")
        turn = build_messages(stage, "x", GOLD, "implicit", HISTORY)
        assert turn[0] == single[0] and turn[1] != single[1]


def test_a_changed_earlier_reply_is_a_different_prompt() -> None:
    changed = DialogueHistory(
        3, (HISTORY.earlier[0], EarlierTurn(2, "What if I never find one?", None, "Calm down.", "own"))
    )
    assert build_messages("response_content", "x", GOLD, None, HISTORY) != build_messages(
        "response_content", "x", GOLD, None, changed
    )


def test_turn_judgements_record_the_history_version() -> None:
    assert prompt_version("perception") == "perception-v1"
    assert prompt_version("perception", with_history=True) == "perception-v1+history-v1"


def test_the_own_reply_wins_over_the_reference_even_when_empty() -> None:
    assert choose_reply("Mine.", "Reference.") == ("Mine.", "own")
    assert choose_reply("  ", "Reference.") == ("Reference.", "reference")  # blank falls back
    assert choose_reply(None, "Reference.") == ("Reference.", "reference")
    assert choose_reply(None, "  ") == ("", "none")


def test_perception_summary_keeps_the_trajectory_fields_only() -> None:
    gold = {"emotion": "fear", "emotion_variant": "anxiety", "intensity": "low", "prosody_caption": "fast"}
    assert perception_summary(gold) == "emotion: fear; emotion_variant: anxiety; intensity: low"
    assert perception_summary(None) == perception_summary({}) == ""
