"""Build configurations are checked before a build starts, with the reason in words."""

from __future__ import annotations

import pytest

from ml.builder.config import BuildConfig, ConfigProblem

ENDPOINT = {"base_url": "http://llm:8000/v1", "model": "m"}


def test_a_configuration_round_trips_through_json() -> None:
    config = BuildConfig.from_json({"endpoints": [ENDPOINT], "emotions": ["sad"], "query_min_score": 4})
    assert BuildConfig.from_json(config.to_json()) == config
    assert config.emotions == ("sad",) and config.endpoints[0].max_concurrency == 4


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "at least one LLM endpoint"),
        ({"endpoints": [{"model": "m"}]}, "base_url and a model"),
        ({"endpoints": [ENDPOINT], "emotions": ["bored"]}, "emotions must be chosen"),
        ({"endpoints": [ENDPOINT], "query_min_score": 6}, "1-5 scale"),
        ({"endpoints": [ENDPOINT], "colour": "red"}, "unknown setting"),
        ({"endpoints": [{**ENDPOINT, "api_key_env": "DJANGO_SECRET_KEY"}]}, "ECHOSTUDIO_JUDGE_KEY_"),
        ({"endpoints": [ENDPOINT], "consistency_method": "endpoint"}, "needs consistency_endpoint"),
        ({"endpoints": [ENDPOINT], "tts_backend": "openai"}, "needs tts_base_url"),
        ({"endpoints": [{**ENDPOINT, "base_url": "javascript:alert(1)"}]}, "http:// or https://"),
        ({"endpoints": [{**ENDPOINT, "base_url": "file:///etc/passwd"}]}, "http:// or https://"),
        ({"endpoints": [{**ENDPOINT, "base_url": "http://"}]}, "names no host"),
        ({"endpoints": [ENDPOINT], "tts_base_url": "ftp://tts/v1"}, "tts_base_url .* http://"),
        (
            {
                "endpoints": [ENDPOINT],
                "consistency_method": "endpoint",
                "consistency_endpoint": {"base_url": "data:text/html,x", "model": "m"},
            },
            "http:// or https://",
        ),
        ({"endpoints": "http://llm:8000/v1"}, "endpoints must be a list"),
        ({"endpoints": 5}, "endpoints must be a list"),
        ({"endpoints": [ENDPOINT], "batch_size": "25"}, "batch_size must be a whole number"),
        ({"endpoints": [ENDPOINT], "query_min_score": True}, "query_min_score must be a whole number"),
        ({"endpoints": [ENDPOINT], "spot_check_rate": None}, "spot_check_rate must be a number"),
        ({"endpoints": [ENDPOINT], "emotions": "sad"}, "emotions must be a list of names"),
        ({"endpoints": [ENDPOINT], "voices": [1, 2]}, "voices must be a list of names"),
        ({"endpoints": [ENDPOINT], "extra": []}, "extra must be an object"),
        ({"endpoints": [{**ENDPOINT, "max_concurrency": "4"}]}, "max_concurrency must be a whole number"),
        ({"endpoints": [{**ENDPOINT, "model": 7}]}, "model must be text"),
        ({"endpoints": [ENDPOINT], "consistency_joint_method": "acoustic"}, "a different check"),
        ({"endpoints": [ENDPOINT], "consistency_joint_method": "local"}, "needs consistency_model_path"),
        ({"endpoints": [ENDPOINT], "consistency_joint_method": "votes"}, "consistency_joint_method is"),
    ],
)
def test_a_bad_configuration_says_what_is_wrong(raw: dict, message: str) -> None:
    with pytest.raises(ConfigProblem, match=message):
        BuildConfig.from_json(raw)


def test_a_speech_server_build_gets_speech_server_voices_unless_told() -> None:
    server = {"endpoints": [ENDPOINT], "tts_backend": "openai", "tts_base_url": "http://tts/v1"}
    assert "alloy" in BuildConfig.from_json(server).voices
    assert BuildConfig.from_json({**server, "voices": ["ryan"]}).voices == ("ryan",)
    assert BuildConfig.from_json({"endpoints": [ENDPOINT]}).voices[0] == "en-us"


def test_whole_numbers_are_numbers_where_a_fraction_is_asked() -> None:
    config = BuildConfig.from_json({"endpoints": [{**ENDPOINT, "timeout_s": 30}], "spot_check_rate": 1})
    assert (config.spot_check_rate, config.endpoints[0].timeout_s) == (1, 30)


def test_the_joint_rule_names_both_checks() -> None:
    assert BuildConfig.from_json({"endpoints": [ENDPOINT]}).consistency_methods() == ("acoustic",)
    joint = BuildConfig.from_json(
        {
            "endpoints": [ENDPOINT],
            "consistency_method": "local",
            "consistency_model_path": "/models/wavlm-emotion",
            "consistency_joint_method": "acoustic",
        }
    )
    assert joint.consistency_methods() == ("local", "acoustic")
