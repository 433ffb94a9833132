"""Planned dialogue trajectories: five known turns with smooth transitions, else a stated drop."""

from __future__ import annotations

from ml.builder.logic.trajectory import PlannedTurn, TrajectoryProblem, planned_turn, read_trajectory


def _turns(*intensities: str) -> dict[str, object]:
    return {
        "turns": [
            {"turn": n, "emotion": "sad", "intensity": level, "strategy": "validation", "beat": f"beat {n}"}
            for n, level in enumerate(intensities, start=1)
        ]
    }


def test_a_smooth_five_turn_trajectory_is_read() -> None:
    planned = read_trajectory(_turns("high", "high", "medium", "medium", "low"), 5)
    assert isinstance(planned, list)
    assert [turn.intensity for turn in planned] == ["high", "high", "medium", "medium", "low"]
    stored = [turn.to_json() for turn in planned]
    assert planned_turn(stored, 3) == PlannedTurn(3, "sad", "medium", "validation", "beat 3")


def test_a_jump_from_high_to_low_is_an_abrupt_shift() -> None:
    problem = read_trajectory(_turns("high", "low", "low", "low", "low"), 5)
    assert isinstance(problem, TrajectoryProblem)
    assert problem.reason == "abrupt_shift" and "turn 1 to 2" in problem.detail


def test_the_wrong_number_of_turns_or_an_unknown_emotion_is_a_format_drop() -> None:
    assert read_trajectory(_turns("low", "low"), 5) == TrajectoryProblem(
        "bad_format", "expected a list of 5 turns"
    )
    answer = _turns("low", "low", "low", "low", "low")
    answer["turns"][2]["emotion"] = "melancholy"  # type: ignore[index]
    problem = read_trajectory(answer, 5)
    assert isinstance(problem, TrajectoryProblem) and "turn 3" in problem.detail
