"""Job metrics grouped into the job page's charts (no database)."""

from __future__ import annotations

from ml.jobs.metric_charts import Chart, Series, metric_charts


def test_sft_metrics_make_a_loss_chart_and_a_rho_chart() -> None:
    points = [
        {"step": 1, "loss": 2.0, "ce": 1.9, "aaa": 1.0, "rho": 0.1, "learning_rate": 1e-5},
        {"step": 2, "loss": 1.5, "ce": 1.4, "aaa": 0.9, "rho": 0.2, "learning_rate": 1e-5},
    ]
    assert metric_charts(points) == [
        Chart(
            "loss",
            "Loss",
            [1, 2],
            [Series("loss", [2.0, 1.5]), Series("ce", [1.9, 1.4]), Series("aaa", [1.0, 0.9])],
        ),
        Chart("rho", "Attention mass on audio (rho)", [1, 2], [Series("rho", [0.1, 0.2])]),
    ]


def test_rl_rewards_and_advantages_get_their_own_charts_with_gaps_where_a_step_is_silent() -> None:
    points = [
        {"step": 1, "loss": 0.1, "reward_total": 0.4, "advantage_abs_response": 0.7},
        {"step": 2, "loss": 0.2, "advantage_abs_response": 0.5},
    ]
    charts = {chart.id: chart for chart in metric_charts(points)}
    assert list(charts) == ["loss", "rewards", "advantages"]
    assert charts["rewards"].series == [Series("reward_total", [0.4, None])]
    assert charts["advantages"].series == [Series("advantage_abs_response", [0.7, 0.5])]


def test_no_points_no_charts() -> None:
    assert metric_charts([]) == []
