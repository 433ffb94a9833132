import pytest

from evaluation.judging.prompts import (
    FLAG_GUIDE,
    PROMPT_VERSIONS,
    SUBSCORE_GUIDE,
    build_messages,
    parse_judgement,
    prompt_version,
)
from evaluation.judging.rubrics import FLAG_CAPS, STAGES, SUBSCORE_RANGES, RubricError, automatic_flags
from tests.support.fake_chat_server import json_reply, running_chat_server
from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient

GOLD_PERCEPTION = {
    "polarity": "negative",
    "emotion": "sad",
    "intensity": "high",
    "prosody": "low pitch, slow",
}


def test_every_subscore_and_flag_is_explained_to_the_judge():
    for stage in STAGES:
        assert set(SUBSCORE_GUIDE[stage]) == set(SUBSCORE_RANGES[stage])
        assert set(FLAG_GUIDE[stage]) == set(FLAG_CAPS[stage])


def test_prompt_versions_are_tagged_per_stage():
    assert prompt_version("perception") == "perception-v1"
    assert PROMPT_VERSIONS["shift_perception"] == "shift-perception-v1"


def test_perception_prompt_carries_rubric_gold_and_output():
    system, user = build_messages("perception", "She sounds sad and tired.", GOLD_PERCEPTION, "implicit")
    assert system["role"] == "system"
    for name, (low, high) in SUBSCORE_RANGES["perception"].items():
        assert f"- {name} ({low}-{high}):" in system["content"]
    assert '"subscores"' in system["content"]
    assert '"rationale"' in system["content"]
    assert '"emotion": "sad"' in user["content"]
    assert user["content"].endswith("She sounds sad and tired.")
    assert "Scenario: implicit" in user["content"]


def test_modality_conflict_flag_is_offered_only_on_conflict_items():
    conflict_system = build_messages("perception", "x", GOLD_PERCEPTION, "modality-conflict")[0]["content"]
    implicit_system = build_messages("perception", "x", GOLD_PERCEPTION, "implicit")[0]["content"]
    assert "missed_modality_conflict" in conflict_system
    assert "missed_modality_conflict" not in implicit_system


def test_structured_output_is_shown_as_json():
    output = {"context": "c", "latent_need": "n", "core_demand": "d", "strategy": ["validation"]}
    user = build_messages("reasoning", output, {"recommended_strategies": ["validation"]}, "high-arousal")[1]
    assert '"latent_need": "n"' in user["content"]


def test_audio_is_attached_for_listening_judges():
    output = {"transcript": "I'm here for you.", "audio_base64": "UklGRg==", "audio_format": "wav"}
    user = build_messages("response_audio", output, {"emotion": "sad"}, "implicit")[1]
    text, audio = user["content"]
    assert "I'm here for you." in text["text"]
    assert "UklGRg==" not in text["text"]
    assert audio == {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}


def test_parse_judgement_applies_caps_and_app_flags():
    data = {
        "subscores": {"context": 2, "latent_need": 2, "core_demand": 2, "strategy": 3, "constraints": 1},
        "flags": [],
        "rationale": "good",
    }
    assert parse_judgement("reasoning", data, "implicit").final == 10.0
    capped = parse_judgement("reasoning", data, "implicit", extra_flags=["recommends_not_recommended"])
    assert (capped.final, capped.cap_reasons) == (6.0, ("recommends_not_recommended",))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"flags": []}, "subscores"),
        ({"subscores": [1, 2]}, "subscores"),
        ({"subscores": {"content": 4}, "flags": "harmful"}, "flags"),
        ({"subscores": {"content": 9}, "flags": []}, "outside 1-5"),
        ({"subscores": {"content": 4}, "flags": ["rude"]}, "unknown response_content flag"),
    ],
)
def test_rubric_breaks_raise(data, message):
    with pytest.raises(RubricError, match=message):
        parse_judgement("response_content", data, None)


def test_missing_flags_mean_none():
    assert parse_judgement("response_audio", {"subscores": {"audio": 4}}, None).final == 4.0


def test_a_judge_run_end_to_end_against_a_chat_server():
    # given a model output that recommends advice, which the gold reference advises against
    gold = {
        "context": "venting about a cancelled trip",
        "recommended_strategies": ["emotional validation"],
        "not_recommended_strategies": ["advice"],
    }
    output = {"context": "c", "latent_need": "n", "core_demand": "d", "strategy": ["validation", "advice"]}
    judge_answer = {
        "subscores": {"context": 2, "latent_need": 1, "core_demand": 2, "strategy": 2, "constraints": 1},
        "flags": [],
        "rationale": "misses that advice is premature",
    }
    # when the judge scores it 8 without flagging the wrong direction
    with running_chat_server([json_reply(judge_answer)]) as server:
        config = ChatJudgeConfig(base_url=server.base_url, model="judge")
        with JudgeClient(config) as client:
            reply = client.complete_json(build_messages("reasoning", output, gold, "implicit"))
    assert reply.ok
    assert reply.data is not None
    score = parse_judgement(
        "reasoning", reply.data, "implicit", extra_flags=automatic_flags("reasoning", output, gold)
    )
    # then the app's own flag caps it at 6
    assert (score.raw_sum, score.final) == (8.0, 6.0)
