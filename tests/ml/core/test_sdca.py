"""Cascaded gating, reward mixing and SDCA advantages on hand-computed groups."""

from __future__ import annotations

import math

import pytest
import torch

from ml.core.config import SdcaConfig
from ml.core.sdca import (
    RolloutScores,
    gated_stage_rewards,
    reasoning_reward,
    response_reward,
    span_advantages,
    span_signals,
    span_weights,
    token_advantages,
    total_advantages,
    total_reward,
)

CONFIG = SdcaConfig()
# Four rollouts of one prompt (tau = 0.6):
#   A passes both gates; B fails the perception gate; C passes perception but fails reasoning;
#   D sits exactly on the threshold, and gates open at equality.
GROUP = [
    RolloutScores(perception=0.8, reasoning=0.7, strategy=0.9, content=4.0, audio_alignment=1.0, format=1.0),
    RolloutScores(perception=0.5, reasoning=0.9, strategy=0.9, content=2.0, audio_alignment=0.0, format=1.0),
    RolloutScores(perception=0.7, reasoning=0.4, strategy=1.0, content=5.0, audio_alignment=1.0, format=0.0),
    RolloutScores(perception=0.6, reasoning=0.6, strategy=0.5, content=0.0, audio_alignment=0.0, format=1.0),
]


def test_gates_zero_later_stages_when_an_earlier_stage_fails() -> None:
    assert [gated_stage_rewards(rollout, CONFIG) for rollout in GROUP] == [
        (0.8, 0.7, 0.9),
        (0.5, 0.0, 0.0),
        (0.7, 0.4, 0.0),
        (0.6, 0.6, 0.5),
    ]


def test_reasoning_response_and_total_rewards() -> None:
    assert [reasoning_reward(rollout, CONFIG) for rollout in GROUP] == pytest.approx(
        [0.8, 0.5 / 3, 1.1 / 3, 1.7 / 3]
    )
    # 0.5 * content / 5 + 0.5 * audio alignment
    assert [response_reward(rollout, CONFIG) for rollout in GROUP] == pytest.approx([0.9, 0.2, 1.0, 0.0])
    # 0.5 R_reas + 0.4 r_resp + 0.1 r_fmt
    assert [total_reward(rollout, CONFIG) for rollout in GROUP] == pytest.approx(
        [0.4 + 0.36 + 0.1, 0.25 / 3 + 0.08 + 0.1, 0.55 / 3 + 0.4, 0.85 / 3 + 0.1]
    )


def test_response_span_signal_mixes_response_and_format() -> None:
    # 0.8 r_resp + 0.2 r_fmt
    assert [span_signals(rollout, CONFIG)["response"] for rollout in GROUP] == pytest.approx(
        [0.92, 0.36, 0.8, 0.2]
    )


def test_span_advantage_uses_the_sample_std_over_the_group() -> None:
    group = [
        RolloutScores(
            perception=1.0, reasoning=0.0, strategy=0.0, content=0.0, audio_alignment=0.0, format=1.0
        ),
        *[
            RolloutScores(
                perception=0.0, reasoning=0.0, strategy=0.0, content=0.0, audio_alignment=0.0, format=1.0
            )
        ]
        * 3,
    ]
    # mean 0.25, deviations (0.75, -0.25, -0.25, -0.25), sample variance 0.75 / 3 = 0.25, std 0.5;
    # then the perception span's weight 4 x 0.5 / 3 = 2/3
    expected_perception = [
        2 / 3 * value for value in (0.75 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001)
    ]

    advantages = span_advantages(group, CONFIG)

    assert advantages.shape == (4, 4)
    assert advantages[:, 0].tolist() == pytest.approx(expected_perception, rel=1e-6)
    # The perception gate only opens for the first rollout, and its reasoning score is 0 anyway.
    assert advantages[:, 1:].tolist() == [[0.0, 0.0, 0.0]] * 4


def test_closed_gates_leave_a_constant_column_with_zero_advantage() -> None:
    group = [
        RolloutScores(
            perception=0.5, reasoning=0.9, strategy=strategy, content=3.0, audio_alignment=1.0, format=1.0
        )
        for strategy in (0.1, 0.5, 0.9, 1.0)
    ]

    advantages = span_advantages(group, CONFIG)

    # Same perception, gated-off reasoning and strategy, same response: nothing to rank on.
    assert torch.count_nonzero(advantages) == 0
    assert torch.count_nonzero(total_advantages(group, CONFIG)) == 0


def test_all_equal_group_gets_zero_advantages() -> None:
    assert torch.count_nonzero(span_advantages([GROUP[0]] * 4, CONFIG)) == 0
    assert torch.count_nonzero(total_advantages([GROUP[0]] * 4, CONFIG)) == 0


def test_span_weights_are_each_spans_share_of_r_total_with_mean_one() -> None:
    # reasoning stages: 0.5 / 3 each; the response span: 0.4 + 0.1; times 4 spans
    assert span_weights(CONFIG) == pytest.approx(
        {"perception": 2 / 3, "reasoning": 2 / 3, "strategy": 2 / 3, "response": 2.0}
    )
    assert sum(span_weights(CONFIG).values()) == pytest.approx(4.0)
    reasoning_heavy = SdcaConfig(reasoning_weight=0.7, response_weight=0.2, format_weight=0.1)
    assert span_weights(reasoning_heavy) == pytest.approx(
        {"perception": 2.8 / 3, "reasoning": 2.8 / 3, "strategy": 2.8 / 3, "response": 1.2}
    )


def test_the_weights_reach_the_span_advantages_not_only_the_tags() -> None:
    equal = span_advantages(GROUP, SdcaConfig(reasoning_weight=0.75, response_weight=0.15, format_weight=0.1))
    default = span_advantages(GROUP, CONFIG)
    # w_reas 0.75 -> perception x 1.0; the default 0.5 -> x 2/3; the response x 1.0 against x 2
    assert equal[:, 0].tolist() == pytest.approx((default[:, 0] * 1.5).tolist(), rel=1e-6)
    assert equal[:, 3].tolist() == pytest.approx((default[:, 3] / 2).tolist(), rel=1e-6)


def test_token_advantages_sdca_assigns_each_span_its_own_advantage() -> None:
    span_adv = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    total_adv = torch.tensor([0.5, -0.5])
    completion_mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 0, 0]], dtype=torch.bool)
    spans = [
        {"perception": (3, 4), "reasoning": (4, 5), "strategy": (5, 6), "response": (6, 7)},
        {"perception": (2, 3), "response": (4, 7)},  # malformed rollout: no reasoning or strategy span
    ]

    sdca = token_advantages(span_adv, total_adv, spans, completion_mask, mode="sdca")
    grpo = token_advantages(span_adv, total_adv, spans, completion_mask, mode="grpo")

    assert sdca.tolist() == [[0, 0, 0.5, 1, 2, 3, 4, 0.5], [0, 0, 5, -0.5, 8, 8, 0, 0]]
    assert grpo.tolist() == [[0, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [0, 0, -0.5, -0.5, -0.5, -0.5, 0, 0]]


def test_weights_must_sum_to_one_and_scores_stay_in_range() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        SdcaConfig(reasoning_weight=0.6, response_weight=0.4, format_weight=0.1)
    with pytest.raises(ValueError, match="sum to 1"):
        SdcaConfig(content_weight=0.7, audio_weight=0.5)
    with pytest.raises(ValueError, match="content"):
        RolloutScores(
            perception=0.5, reasoning=0.5, strategy=0.5, content=6.0, audio_alignment=1.0, format=1.0
        )


def test_a_rollout_whose_judge_failed_is_left_out_of_its_groups_statistics() -> None:
    def rollout(perception: float, judge_failed: bool = False) -> RolloutScores:
        return RolloutScores(
            perception=perception,
            reasoning=0.0,
            strategy=0.0,
            content=0.0,
            audio_alignment=0.0,
            format=1.0,
            judge_failed=judge_failed,
        )

    group = [rollout(1.0), rollout(0.0), rollout(0.0), rollout(0.0, judge_failed=True)]

    # Judged perception (1, 0, 0): mean 1/3, deviations (2/3, -1/3, -1/3), sample variance
    # (4/9 + 1/9 + 1/9) / 2 = 1/3; the failed rollout is not a fourth 0 (which would give mean 1/4).
    std = math.sqrt(1 / 3) + 1e-4
    expected = [2 / 3 * value / std for value in (2 / 3, -1 / 3, -1 / 3)] + [0.0]
    advantages = span_advantages(group, CONFIG)
    assert advantages[:, 0].tolist() == pytest.approx(expected, rel=1e-6)
    assert advantages[3].tolist() == [0.0, 0.0, 0.0, 0.0]

    # R_total: 0.5 x (1/3) + 0.1 = a + 1/6 for the first, a = 0.1 for the other two judged ones:
    # deviations (1/9, -1/18, -1/18), variance (1/81 + 2/324) / 2 = 1/108.
    total_std = math.sqrt(1 / 108) + 1e-4
    expected_totals = [value / total_std for value in (1 / 9, -1 / 18, -1 / 18)] + [0.0]
    assert total_advantages(group, CONFIG).tolist() == pytest.approx(expected_totals, rel=1e-6)


def test_a_group_with_one_judged_rollout_has_no_signal() -> None:
    failed = RolloutScores(0.0, 0.0, 0.0, 0.0, 0.0, 1.0, judge_failed=True)
    group = [GROUP[0], failed, failed]
    assert torch.count_nonzero(span_advantages(group, CONFIG)) == 0
    assert torch.count_nonzero(total_advantages(group, CONFIG)) == 0
