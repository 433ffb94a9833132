"""Smoke runs of the learning benches' cores with tiny budgets: they run and report sane figures.

The figures themselves come from the benches (docs/benchmarks.md); here only that each core runs end to end.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import torch

from ml.core.rl.grpo import rl_update
from ml.core.rl.rollouts import RolloutGroup
from ml.core.speech.inputs import SpeechExample, completion_logprobs
from ml.core.synthetic.prosody import EMOTIONS, GOLD, PROMPT, ProsodyTask
from ml.core.synthetic.reward_probe import TRAIN_PHRASINGS, cached_voice, ladder_examples, run_reward
from ml.core.synthetic.rl_probe import rl_config, rl_prompts, run_rl, synthetic_stage_scorer
from ml.core.synthetic.sft_probe import build_model, checkpoint_dir, run_sft, sft_checkpoint


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
    seen = small_task.train[:2]
    sdca = run_rl(start, small_task.train, test, "sdca", seed=0, steps=1, samples=1, seen=seen)
    grpo = run_rl(start, small_task.train, test, "grpo", seed=0, steps=1, samples=1, seen=seen)
    for outcome in (sdca, grpo):
        for metrics in (outcome.before, outcome.after, outcome.seen_before, outcome.seen_after):
            assert 0.0 <= metrics["total"] <= 1.0
            assert {
                "perception_score",
                "reasoning_score",
                "strategy_score",
                "greedy_accuracy",
            } <= metrics.keys()
    # Measured with the same seed, prompts and temperature: "before" is one figure for both modes.
    assert grpo.before == sdca.before and grpo.seen_before == sdca.seen_before


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


def test_an_rl_update_moves_the_policy_towards_the_gold_and_away_from_wrong_emotions(
    small_task: ProsodyTask,
) -> None:
    utterance = small_task.train[0]
    completions = (utterance.gold.output(), *(GOLD[e].output() for e in EMOTIONS if e != utterance.emotion))
    policy = build_model(seed=0)
    reference = copy.deepcopy(policy)
    config = rl_config("sdca", seed=0, steps=1)
    batch = policy.collate([SpeechExample(utterance.audio, PROMPT, text) for text in completions])

    def sequence_logprobs() -> torch.Tensor:
        with torch.no_grad():
            logits = policy.forward(batch).logits / config.temperature
        assert batch.labels is not None
        return completion_logprobs(logits, batch.labels).sum(dim=1)

    before = sequence_logprobs()
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-3)
    group = RolloutGroup(prompt=rl_prompts([utterance])[0], completions=completions)
    for _ in range(3):
        rl_update(policy, reference, [group], synthetic_stage_scorer(small_task.train), config, optimizer)
    change = sequence_logprobs() - before
    assert change[0] > 0
    assert (change[1:] < change[0]).all()
