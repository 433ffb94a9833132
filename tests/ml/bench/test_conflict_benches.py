"""Smoke runs of the conflict benches with tiny budgets, and the seam between them: the plain SFT
run saves the model every RL arm of its seed starts from."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench import conflict_rl, conflict_sft
from ml.core.speech.tiny import build_tiny_speech_lm
from ml.core.synthetic.conflict import EMOTIONS, ConflictTask, build_conflict_task


@pytest.fixture
def tiny_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ConflictTask:
    monkeypatch.setenv("ECHOSTUDIO_VAR_DIR", str(tmp_path))
    return build_conflict_task(train_size=16, test_size=8, seed=0)


def test_plain_and_aaa_runs_share_a_start_and_report_accuracy_and_rho(tiny_task: ConflictTask) -> None:
    plain = conflict_sft.one_run(seed=0, lambda_aaa=0.0, steps=2, task=tiny_task)
    aaa = conflict_sft.one_run(seed=0, lambda_aaa=0.1, steps=2, task=tiny_task)
    # Same seed, same initial weights: the runs differ only by the AAA term.
    assert plain["rho_before"] == aaa["rho_before"]
    for run in (plain, aaa):
        assert 0.0 <= run["accuracy"] <= 1.0 and 0.0 <= run["follows_words"] <= 1.0
        # Listening is a probability, its curve's mean as well as its last point.
        assert 0.0 < run["listening"] < 1.0 and 0.0 < run["listening_end"] < 1.0
        assert 0.0 < run["rho_after"] < 1.0
    # On an all-conflict test set a label cannot be both the voice's and the words'.
    assert plain["accuracy"] + plain["follows_words"] <= 1.0


def test_every_rl_arm_starts_from_the_model_plain_sft_saved(tiny_task: ConflictTask) -> None:
    conflict_sft.one_run(seed=0, lambda_aaa=0.0, steps=2, task=tiny_task)
    directory = conflict_sft.start_checkpoint(0, 2, tiny_task)
    saved_at = (directory / "config.json").stat().st_mtime_ns
    first = conflict_rl.start_model(0, 2, tiny_task).model.state_dict()
    second = conflict_rl.start_model(0, 2, tiny_task).model.state_dict()
    assert all(first[name].equal(second[name]) for name in first)
    # Loaded, not trained again; and trained, not the random initial model.
    assert (directory / "config.json").stat().st_mtime_ns == saved_at
    fresh = build_tiny_speech_lm(conflict_sft.ARCH, seed=0, spec=conflict_sft.SPEC).model.state_dict()
    assert any(not first[name].equal(fresh[name]) for name in first)
    # A changed recipe (another budget) is another file, never the stale one.
    assert conflict_sft.start_checkpoint(0, 3, tiny_task) != directory


def test_table8_of_a_start_is_the_same_for_every_arm_that_measures_it(tiny_task: ConflictTask) -> None:
    once = conflict_rl.start_figures(0, 1, samples=1, task=tiny_task)
    again = conflict_rl.start_figures(0, 1, samples=1, task=tiny_task)
    assert set(once) == set(conflict_rl.METRICS)
    assert all(
        once[name] == again[name] or (math.isnan(once[name]) and math.isnan(again[name])) for name in once
    )
    assert all(math.isnan(value) or 0.0 <= value <= 1.0 for value in once.values())


def test_emotion_probabilities_are_the_softmax_of_each_candidates_own_likelihood(
    tiny_task: ConflictTask,
) -> None:
    import torch

    speech_lm = build_tiny_speech_lm(conflict_sft.ARCH, seed=3, spec=conflict_sft.SPEC)
    items = tiny_task.test[:3]
    batched = conflict_sft.emotion_probabilities(speech_lm, items)
    # Brute force: each candidate alone, its target tokens' log-probabilities summed by hand.
    for item, probabilities in zip(items, batched, strict=True):
        output = item.gold.output()
        prefix = output[: output.index("Emotion: ") + len("Emotion: ")]
        totals = []
        for emotion in EMOTIONS:
            batch = speech_lm.build_inputs(item.audio, item.prompt, f"{prefix}{emotion}.")
            with torch.no_grad():
                logits = speech_lm.forward(batch).logits[0]
            start = batch.target_starts[0]
            target_ids = batch.model_inputs["input_ids"][0, start:-1]  # the end-of-turn left out
            logprobs = torch.log_softmax(logits[start - 1 : -2].float(), dim=-1)
            totals.append(float(logprobs.gather(-1, target_ids.unsqueeze(-1)).sum()))
        expected = torch.tensor(totals).softmax(dim=0).tolist()
        assert list(probabilities) == list(EMOTIONS)
        assert list(probabilities.values()) == pytest.approx(expected, abs=1e-5)
        assert sum(probabilities.values()) == pytest.approx(1.0)
    # The listening figure is the spoken emotion's share, averaged over the items.
    assert conflict_sft.listening(speech_lm, items) == pytest.approx(
        sum(p[item.emotion] for p, item in zip(batched, items, strict=True)) / len(items)
    )
