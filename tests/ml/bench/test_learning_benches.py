"""Smoke runs of the learning benches' cores with tiny budgets: they run and report sane figures.

The figures themselves come from the benches (README); here only that each core runs end to end.
"""

from __future__ import annotations

import math
from pathlib import Path

from ml.core.synthetic.prosody import ProsodyTask
from ml.core.synthetic.reward_probe import TRAIN_PHRASINGS, cached_voice, ladder_examples, run_reward
from ml.core.synthetic.rl_probe import run_rl
from ml.core.synthetic.sft_probe import checkpoint_dir, run_sft, sft_checkpoint


def test_sft_with_and_without_aaa_reports_accuracy_and_rho(small_task: ProsodyTask) -> None:
    plain, _ = run_sft(small_task, seed=0, lambda_aaa=0.0, steps=2)
    aaa, _ = run_sft(
        small_task, seed=0, lambda_aaa=0.1, steps=2, before=(plain.accuracy_before, plain.rho_before)
    )
    for outcome in (plain, aaa):
        assert 0.0 <= outcome.accuracy_before <= 1.0 and 0.0 <= outcome.accuracy_after <= 1.0
        assert 0.0 < outcome.rho_before < 1.0 and 0.0 < outcome.rho_after < 1.0
        assert math.isfinite(outcome.final_ce)
    # Same seed, same initial model: the runs differ only by the AAA term.
    assert aaa.rho_before == plain.rho_before


def test_rl_from_the_cached_sft_checkpoint_reports_rewards_per_mode(
    small_task: ProsodyTask, tmp_path: Path
) -> None:
    start = sft_checkpoint(small_task, seed=0, steps=2, cache_dir=tmp_path)
    assert (checkpoint_dir(tmp_path, 0, 2) / "config.json").exists()
    reloaded = sft_checkpoint(small_task, seed=0, steps=2, cache_dir=tmp_path)
    first = next(iter(start.model.state_dict().values()))
    assert first.equal(next(iter(reloaded.model.state_dict().values())))
    test = small_task.test[:4]
    sdca = run_rl(start, small_task.train, test, "sdca", seed=0, steps=1, samples=1)
    grpo = run_rl(start, small_task.train, test, "grpo", seed=0, steps=1, samples=1, before=sdca.before)
    for outcome in (sdca, grpo):
        for metrics in (outcome.before, outcome.after):
            assert 0.0 <= metrics["total"] <= 1.0
            assert {
                "perception_score",
                "reasoning_score",
                "strategy_score",
                "greedy_accuracy",
            } <= metrics.keys()
    assert grpo.before == sdca.before


def test_the_reward_model_trains_on_the_synthetic_ladder_and_reports_rankings(
    small_task: ProsodyTask,
) -> None:
    voice = cached_voice()
    examples = ladder_examples(small_task.test[:1], TRAIN_PHRASINGS, voice)
    # One turn, every training phrasing: 6 grades x 3 phrasings aligned, grades 5, 3, 1 also clashing.
    assert len(examples) == 6 * 3 + 3 * 3
    assert sorted({example.content_grade for example in examples}) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    outcome = run_reward(small_task.train[:4], small_task.test[:2], seed=0, steps=1, voice=voice)
    for figures in (outcome.seen_before, outcome.seen_after, outcome.new_before, outcome.new_after):
        assert -1.0 <= figures.spearman <= 1.0
        assert 0.0 <= figures.alignment_accuracy <= 1.0
    assert outcome.new_after.count == 2 * (6 + 3)
