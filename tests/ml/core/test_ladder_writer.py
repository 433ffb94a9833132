"""Appendix D.1's ladder written by an OpenAI-compatible LLM, over real HTTP to a local chat server."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ml.core.reward.ladder import RewardSourceItem, build_reward_training_examples
from ml.core.reward.ladder_writer import ladder_messages, parse_ladder, write_graded_ladders
from tests.support.fake_chat_server import RecordedRequest, Reply, chat_reply, json_reply, running_chat_server
from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient


def item(item_id: str) -> RewardSourceItem:
    return RewardSourceItem(
        item_id=item_id,
        user_audio=np.zeros(16_000, dtype=np.float32),
        sample_rate=16_000,
        emotion="sad",
        reference_response=f"That sounds so hard ({item_id}). I am here.",
        user_text="I failed the exam again.",
        strategies=("emotional-validation",),
    )


def answer(request: RecordedRequest) -> Reply:
    prompt = json.dumps(request.json)
    if "(bad)" in prompt:
        return chat_reply("Sure! Here are some replies: ...")
    if "(short)" in prompt:
        return json_reply({"0": "Get over it.", "1": "Okay."})
    return json_reply({str(grade): f"  Reply   of grade {grade}. " for grade in range(5)})


def test_each_item_gets_grades_0_to_4_from_the_llm_and_keeps_its_reference_as_5() -> None:
    with running_chat_server(answer) as server:
        client = JudgeClient(ChatJudgeConfig(base_url=server.base_url, model="writer", max_retries=0))
        written, counts = write_graded_ladders(client, [item("good"), item("bad"), item("short")])

    assert (counts.written, counts.fell_back) == (1, 2)
    assert counts.last_error.startswith(("bad", "short"))
    assert written[0].graded_responses == {grade: f"Reply of grade {grade}." for grade in range(5)}
    assert written[1].graded_responses == written[2].graded_responses == {}
    # the prompt shows the user's words, emotion, strategies, the grade-5 reference and every rung
    # (the three prompts run concurrently, so they arrive in any order)
    prompts = [request.json["messages"][1]["content"] for request in server.chat_requests]  # type: ignore[index]
    (prompt,) = [text for text in prompts if "(good)" in text]
    for expected in (
        "I failed the exam again.",
        "sad",
        "emotional-validation",
        "(good). I am here.",
        "harmful",
    ):
        assert expected in prompt

    examples = build_reward_training_examples(
        written[:1], lambda text, style: (np.zeros(1600, dtype=np.int16), 16_000), mismatched_grades=()
    )
    assert [example.inputs.response_text for example in examples] == [
        *(f"Reply of grade {grade}." for grade in range(5)),
        "That sounds so hard (good). I am here.",
    ]


def test_a_ladder_answer_needs_text_for_every_written_grade() -> None:
    assert set(parse_ladder({str(grade): "x" for grade in range(5)})) == set(range(5))
    with pytest.raises(ValueError, match="grade 3 has no text"):
        parse_ladder({"0": "a", "1": "b", "2": "c", "3": " ", "4": "e"})
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_ladder(None)
    assert ladder_messages(item("x"))[0]["role"] == "system"
