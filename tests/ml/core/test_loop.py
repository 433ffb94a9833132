"""The step loop every training loop runs through: run length, example order, progress, cancellation."""

from __future__ import annotations

from dataclasses import dataclass

from ml.core.loop import StepFunction, run_steps


@dataclass(frozen=True)
class Length:
    epochs: int = 1
    max_steps: int | None = None
    seed: int = 0


def recording_into(seen: list[list[int]]) -> StepFunction:
    """Return a step that only notes which examples it was given."""

    def take_step(step: int, taken: list[int]) -> dict[str, float]:
        seen.append(taken)
        return {}

    return take_step


def test_epochs_cover_every_example_once_per_pass_with_a_smaller_last_step() -> None:
    seen: list[list[int]] = []

    result = run_steps(5, 2, Length(epochs=2), recording_into(seen))

    assert (result.total_steps, result.steps_completed, result.cancelled) == (6, 6, False)
    assert [len(taken) for taken in seen] == [2, 2, 1, 2, 2, 1]
    assert sorted(index for taken in seen[:3] for index in taken) == [0, 1, 2, 3, 4]
    assert sorted(index for taken in seen[3:] for index in taken) == [0, 1, 2, 3, 4]


def test_max_steps_overrides_epochs_and_the_same_seed_gives_the_same_order() -> None:
    def order(seed: int) -> list[list[int]]:
        seen: list[list[int]] = []
        run_steps(4, 2, Length(epochs=1, max_steps=5, seed=seed), recording_into(seen))
        return seen

    assert len(order(3)) == 5
    assert order(3) == order(3)


def test_each_step_is_recorded_and_reported_with_its_number_first_until_cancelled() -> None:
    reports: list[tuple[float, str, dict[str, float]]] = []
    checks = iter([False, False, True])

    result = run_steps(
        4,
        1,
        Length(max_steps=4),
        lambda step, taken: {"loss": float(step)},
        on_progress=lambda *report: reports.append(report),
        should_cancel=lambda: next(checks),
    )

    assert result.cancelled and result.steps_completed == 2 and result.total_steps == 4
    assert result.history == [{"step": 1.0, "loss": 0.0}, {"step": 2.0, "loss": 1.0}]
    assert list(result.history[0]) == ["step", "loss"]
    assert reports == [(0.25, "step 1/4", result.history[0]), (0.5, "step 2/4", result.history[1])]
    assert result.last_metrics() == {"step": 2.0, "loss": 1.0}
