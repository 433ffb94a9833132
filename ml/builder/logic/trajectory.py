"""A dialogue's planned trajectory (paper B.5): five turns of user emotion, intensity and strategy.

The LLM proposes it; ``read_trajectory`` accepts it only when it has the right number of turns,
known emotions and intensities, a strategy per turn, and smooth transitions (intensity moves at
most one step between turns). A rejected trajectory drops the dialogue with the reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ml.builder.stages import BAD_FORMAT
from webapp.lib.vocabulary import EMOTIONS, INTENSITIES

ABRUPT_SHIFT = "abrupt_shift"


@dataclass(frozen=True)
class PlannedTurn:
    turn: int
    emotion: str
    intensity: str
    strategy: str
    beat: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrajectoryProblem:
    reason: str
    detail: str


def read_trajectory(data: Mapping[str, Any], turns: int) -> list[PlannedTurn] | TrajectoryProblem:
    """Return the planned turns of an LLM's answer, or why they cannot be used."""
    raw = data.get("turns")
    if not isinstance(raw, list) or len(raw) != turns:
        return TrajectoryProblem(BAD_FORMAT, f"expected a list of {turns} turns")
    planned: list[PlannedTurn] = []
    for number, entry in enumerate(raw, start=1):
        if not isinstance(entry, Mapping):
            return TrajectoryProblem(BAD_FORMAT, f"turn {number} is not an object")
        emotion = str(entry.get("emotion") or "").strip().lower()
        intensity = str(entry.get("intensity") or "").strip().lower()
        strategy = str(entry.get("strategy") or "").strip()
        if emotion not in EMOTIONS or intensity not in INTENSITIES or not strategy:
            return TrajectoryProblem(
                BAD_FORMAT, f"turn {number} needs a known emotion, a known intensity and a strategy"
            )
        planned.append(
            PlannedTurn(number, emotion, intensity, strategy[:200], str(entry.get("beat") or "")[:500])
        )
    for before, after in itertools.pairwise(planned):
        if abs(INTENSITIES.index(before.intensity) - INTENSITIES.index(after.intensity)) > 1:
            return TrajectoryProblem(
                ABRUPT_SHIFT,
                f"turn {before.turn} to {after.turn} jumps from {before.intensity} to {after.intensity} intensity",
            )
    return planned


def planned_turn(trajectory: list[dict[str, Any]], turn: int) -> PlannedTurn:
    """Return one turn of a stored trajectory (``BuildDialogue.trajectory``)."""
    entry = next(entry for entry in trajectory if int(entry["turn"]) == turn)
    return PlannedTurn(**{key: entry[key] for key in ("turn", "emotion", "intensity", "strategy", "beat")})
