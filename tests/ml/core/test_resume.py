"""A training run stopped part-way resumes from its last saved state and ends as an uninterrupted run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from ml.core.config import LoraSettings, RewardTrainingConfig, SftConfig
from ml.core.loop import ResumeSpec, StepFunction, TrainingResult, run_steps
from ml.core.resume import TrainingState
from ml.core.reward.ladder import RewardExample
from ml.core.reward.model import build_reward_model
from ml.core.reward.training import train_reward_model
from ml.core.sft import train_sft
from ml.core.speech.tiny import build_tiny_speech_lm
from tests.ml.core.test_reward_model import TINY, examples  # noqa: F401 (a fixture)
from tests.ml.core.test_sft_pipeline import examples as sft_examples


class WorkerDied(BaseException):
    """Stands for the worker process being killed: nothing in the run may catch it."""


@dataclass(frozen=True)
class Length:
    epochs: int = 1
    max_steps: int | None = None
    seed: int = 0


class MemoryState:
    """A ``Resumable`` kept in memory: what run_steps saved, and when."""

    def __init__(self, every_steps: int) -> None:
        self.every_steps = every_steps
        self.saved_at: list[int] = []
        self.saved: tuple[int, list[dict[str, float]]] | None = None

    def save(self, steps_done: int, history: list[dict[str, float]]) -> None:
        self.saved_at.append(steps_done)
        self.saved = (steps_done, [dict(entry) for entry in history])

    def restore(self) -> tuple[int, list[dict[str, float]]] | None:
        return self.saved


def recording(seen: list[list[int]], die_at: int | None = None) -> StepFunction:
    def take_step(step: int, taken: list[int]) -> dict[str, float]:
        if step == die_at:
            raise WorkerDied()
        seen.append(taken)
        return {"loss": float(sum(taken))}

    return take_step


def test_the_state_is_saved_every_n_steps_and_after_every_pass_but_not_after_the_last_step() -> None:
    state = MemoryState(every_steps=4)

    run_steps(5, 2, Length(epochs=3), recording([]), resume=state)

    # three steps a pass (2 + 2 + 1 examples), nine in all
    assert state.saved_at == [3, 4, 6, 8]


def test_a_resumed_run_continues_the_example_order_and_reports_each_later_step_once() -> None:
    whole: list[list[int]] = []
    uninterrupted = run_steps(5, 2, Length(epochs=3), recording(whole))
    state = MemoryState(every_steps=4)
    first: list[list[int]] = []
    with pytest.raises(WorkerDied):
        run_steps(5, 2, Length(epochs=3), recording(first, die_at=5), resume=state)

    later: list[list[int]] = []
    reported: list[str] = []
    resumed = run_steps(
        5,
        2,
        Length(epochs=3),
        recording(later),
        lambda _, message, __: reported.append(message),
        resume=state,
    )

    assert first == whole[:5] and later == whole[4:]
    assert reported == [f"step {step}/9" for step in range(5, 10)]
    assert resumed == uninterrupted


def interrupted_then_resumed(
    train: Callable[[ResumeSpec, Callable[[], bool]], TrainingResult], spec: ResumeSpec, die_after: int
) -> TrainingResult:
    """Run ``train`` until it has done ``die_after`` steps, kill it, then run it again on the same state."""
    done: list[int] = []

    def dies() -> bool:
        # Polled before every step: the worker dies once die_after steps are done.
        if len(done) >= die_after:
            raise WorkerDied()
        done.append(1)
        return False

    with pytest.raises(WorkerDied):
        train(spec, dies)
    assert spec.saved_step()
    return train(spec, lambda: False)


def test_a_torch_state_restores_weights_optimizer_and_random_draws(tmp_path: Path) -> None:
    def train(spec: ResumeSpec | None, should_cancel: Callable[[], bool]) -> TrainingResult:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 1))
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
        inputs = torch.randn(8, 3)

        def take_step(step: int, taken: list[int]) -> dict[str, float]:
            optimizer.zero_grad()
            loss = model(inputs[taken]).pow(2).mean()
            loss.backward()
            optimizer.step()
            return {"loss": float(loss.detach())}

        state = TrainingState(spec, model, optimizer) if spec is not None else None
        result = run_steps(8, 2, Length(epochs=3), take_step, should_cancel=should_cancel, resume=state)
        result.history.append({name: float(value.sum()) for name, value in model.state_dict().items()})
        return result

    spec = ResumeSpec(tmp_path / "job-1", every_steps=5)
    resumed = interrupted_then_resumed(train, spec, die_after=7)

    assert resumed.history == train(None, lambda: False).history


def test_sft_with_lora_and_the_aaa_target_resumes_to_the_uninterrupted_weights(tmp_path: Path) -> None:
    config = SftConfig(
        max_steps=4,
        batch_size=1,
        learning_rate=1e-3,
        lambda_aaa=0.1,
        aaa_target_ratio=2.0,
        lora=LoraSettings(rank=2, alpha=4, dropout=0.1),
    )
    data = sft_examples(3)
    models: list[Any] = []

    def train(spec: ResumeSpec | None, should_cancel: Callable[[], bool]) -> TrainingResult:
        speech_lm = build_tiny_speech_lm("qwen2_audio", seed=0)
        models.append(speech_lm)
        return train_sft(speech_lm, data, config, should_cancel=should_cancel, resume=spec)

    uninterrupted = train(None, lambda: False)
    resumed = interrupted_then_resumed(train, ResumeSpec(tmp_path / "job-2", every_steps=2), die_after=3)

    assert resumed.history == uninterrupted.history
    # the AAA target set at the very first step came back with the state
    assert {entry["aaa_target"] for entry in resumed.history} == {uninterrupted.history[0]["aaa_target"]}
    expected, actual = models[0].model.state_dict(), models[-1].model.state_dict()
    for name, tensor in expected.items():
        torch.testing.assert_close(actual[name], tensor, msg=name)


def test_reward_model_training_resumes_to_the_uninterrupted_weights(
    examples: list[RewardExample],  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    config = RewardTrainingConfig(max_steps=3, batch_size=2)
    models: list[Any] = []

    def train(spec: ResumeSpec | None, should_cancel: Callable[[], bool]) -> TrainingResult:
        model = build_reward_model(TINY, seed=1)
        models.append(model)
        return train_reward_model(model, examples[:4], config, should_cancel=should_cancel, resume=spec)

    uninterrupted = train(None, lambda: False)
    resumed = interrupted_then_resumed(train, ResumeSpec(tmp_path / "job-3", every_steps=1), die_after=2)

    assert resumed.history == uninterrupted.history
    for name, tensor in models[0].state_dict().items():
        torch.testing.assert_close(models[-1].state_dict()[name], tensor, msg=name)
