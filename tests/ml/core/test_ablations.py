"""The paper's ablation presets: what each sets, that it is recorded, and where it can be chosen."""

from __future__ import annotations

import pytest

from ml.cli import build_parser
from ml.core.ablations import RL_ABLATIONS, SFT_ABLATIONS, with_ablation
from ml.core.config import RlConfig, SdcaConfig, SftConfig
from ml.core.sdca import RolloutScores, span_weights, total_reward


def test_no_aaa_turns_the_attention_loss_off_and_is_recorded() -> None:
    config = with_ablation(SftConfig(lambda_aaa=0.3), "no_aaa")
    assert (config.lambda_aaa, config.ablation) == (0.0, "no_aaa")
    assert SftConfig.from_dict(config.to_dict()) == config


def test_no_gating_opens_every_gate() -> None:
    config = with_ablation(RlConfig(), "no_gating")
    assert (config.sdca.tau, config.mode, config.ablation) == (0.0, "sdca", "no_gating")


def test_vanilla_grpo_credits_every_token_alike() -> None:
    config = with_ablation(RlConfig(), "vanilla_grpo")
    assert (config.mode, config.sdca, config.ablation) == ("grpo", SdcaConfig(), "vanilla_grpo")


def test_no_response_reward_drops_the_reward_models_signal_everywhere() -> None:
    config = with_ablation(RlConfig(), "no_response_reward")
    sdca = config.sdca
    # 0.5 and 0.1 rescaled to sum to 1: 5/6 and 1/6
    assert (sdca.reasoning_weight, sdca.response_weight, sdca.format_weight) == pytest.approx(
        (5 / 6, 0.0, 1 / 6)
    )
    assert (sdca.response_span_response_weight, sdca.response_span_format_weight) == (0.0, 1.0)
    good = RolloutScores(perception=1, reasoning=1, strategy=1, content=5, audio_alignment=1, format=1)
    poor = RolloutScores(perception=1, reasoning=1, strategy=1, content=0, audio_alignment=0, format=1)
    assert total_reward(good, sdca) == total_reward(poor, sdca) == pytest.approx(1.0)
    # the response span keeps the format credit: 4 x 1/6
    assert span_weights(sdca)["response"] == pytest.approx(2 / 3)
    assert RlConfig.from_dict(config.to_dict()) == config


def test_format_response_only_drops_the_reasoning_reward_table_6_v3() -> None:
    config = with_ablation(RlConfig(), "format_response_only")
    sdca = config.sdca
    # 0.4 and 0.1 rescaled to sum to 1: 0.8 and 0.2; one trajectory-level advantage
    assert (sdca.reasoning_weight, sdca.response_weight, sdca.format_weight) == pytest.approx((0.0, 0.8, 0.2))
    assert config.mode == "grpo"
    wrong_stages = RolloutScores(
        perception=0, reasoning=0, strategy=0, content=5, audio_alignment=1, format=1
    )
    right_stages = RolloutScores(
        perception=1, reasoning=1, strategy=1, content=5, audio_alignment=1, format=1
    )
    # the stages no longer matter: 0.8 x (0.5 x 5/5 + 0.5 x 1) + 0.2 x 1 = 1
    assert total_reward(wrong_stages, sdca) == total_reward(right_stages, sdca) == pytest.approx(1.0)
    half = RolloutScores(perception=1, reasoning=1, strategy=1, content=0, audio_alignment=1, format=0)
    # 0.8 x (0 + 0.5) + 0 = 0.4
    assert total_reward(half, sdca) == pytest.approx(0.4)
    assert RlConfig.from_dict(config.to_dict()) == config


def test_the_full_method_changes_nothing_and_unknown_presets_are_refused() -> None:
    assert with_ablation(RlConfig(), "none") == RlConfig()
    assert with_ablation(SftConfig(), "none") == SftConfig()
    with pytest.raises(ValueError, match="unknown RL ablation 'no_aaa'"):
        with_ablation(RlConfig(), "no_aaa")
    with pytest.raises(ValueError, match="unknown SFT ablation 'vanilla_grpo'"):
        with_ablation(SftConfig(), "vanilla_grpo")


@pytest.mark.parametrize(("command", "presets"), [("sft", SFT_ABLATIONS), ("rl", RL_ABLATIONS)])
def test_the_command_line_offers_each_stages_presets(command: str, presets: dict[str, str]) -> None:
    arguments = [command, "--data", "records.jsonl", "--model", "tiny", "--output", "out"]
    assert build_parser().parse_args(arguments).ablation == "none"
    assert [build_parser().parse_args([*arguments, "--ablation", name]).ablation for name in presets] == list(
        presets
    )
