"""RL's logged metrics over ranks (``reduce_metrics``), with the all-reduce simulated for two ranks."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from ml.core.rl import training
from ml.core.rl.training import reduce_metrics
from ml.core.runtime import Ranks


def test_rl_metrics_sum_counts_weight_rewards_by_judged_rollouts_and_average_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given what the other rank sends to the all-reduce: 1 judged rollout of 4, no KL measured
    sent: list[float] = []

    def other_rank(values: Sequence[float], ranks: Ranks) -> list[float]:
        sent.extend(values)
        return list(values)

    monkeypatch.setattr(training, "sum_across_ranks", other_rank)
    other = {"loss": 3.0, "kl": math.nan, "reward_total": 0.2, "judge_failed_rollouts": 3.0}
    reduce_metrics(other, judged=1, ranks=Ranks(rank=1, world_size=2))

    def both_ranks(values: Sequence[float], ranks: Ranks) -> list[float]:
        return [mine + theirs for mine, theirs in zip(values, sent, strict=True)]

    monkeypatch.setattr(training, "sum_across_ranks", both_ranks)

    # when this rank, with 3 judged rollouts of 4, reduces its own
    mine = {"loss": 1.0, "kl": 0.5, "reward_total": 0.6, "judge_failed_rollouts": 1.0}
    reduced = reduce_metrics(mine, judged=3, ranks=Ranks(rank=0, world_size=2))

    # then failures add up, the reward is the mean over the 4 judged rollouts, the loss the mean
    # over the ranks, and KL the mean over the ranks that measured it
    assert reduced == pytest.approx(
        {"loss": 2.0, "kl": 0.5, "reward_total": (3 * 0.6 + 0.2) / 4, "judge_failed_rollouts": 4.0}
    )


def test_on_one_process_the_metrics_are_unchanged() -> None:
    metrics = {"loss": 1.5, "kl": 0.25, "reward_total": 0.75, "judge_failed_rollouts": 2.0}

    assert reduce_metrics(metrics, judged=6, ranks=Ranks()) == pytest.approx(metrics)
