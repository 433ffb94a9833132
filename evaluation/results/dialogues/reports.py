"""Dialogue results from stored judgements: Table 2 per turn and the dialogue-level scores.

One query reads the stage scores of every judged dialogue turn (a handful per turn, however many
systems); the rules are those of `evaluation.results.dialogues.scores`, applied in Python.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count

from evaluation.judging.models import JudgeConfig
from evaluation.outputs.models import System
from evaluation.results.dialogues.scores import (
    DEFAULT_FALL_THRESHOLD,
    DialogueBoard,
    DialogueSummary,
    TurnRecord,
    dialogue_board,
)
from evaluation.results.leaderboard import LeaderboardRow, StageRecord
from evaluation.results.reports import DIALOGUES, expected_item_rows, judgements_in_set, systems_for

# A turn's overall score is on Table 2's 10-point All scale.
MAX_FALL_THRESHOLD = 10.0


@dataclass(frozen=True)
class ResultsDialogueBoard:
    board: DialogueBoard  # rows named by system name
    systems: list[System]  # in row order
    judgements: int = 0  # stored by this judge for the version's dialogue turns, errors included

    def turn_rows(self, turn: int) -> list[tuple[System, LeaderboardRow]]:
        """Return one turn's Table-2 rows beside their systems."""
        return list(zip(self.systems, self.board.per_turn[turn].rows, strict=True))

    def summaries_with_systems(self) -> list[tuple[System, DialogueSummary]]:
        return list(zip(self.systems, self.board.summaries, strict=True))


def dialogue_leaderboard(
    benchmark_version: str, judge_config: JudgeConfig, threshold: float = DEFAULT_FALL_THRESHOLD
) -> ResultsDialogueBoard:
    """Return Table 2 per turn index and each system's dialogue-level scores for a version's dialogues."""
    if not 0.0 < threshold <= MAX_FALL_THRESHOLD:
        raise ValueError(f"the fall threshold is a turn score in (0, {MAX_FALL_THRESHOLD:g}]")
    systems = systems_for(benchmark_version, DIALOGUES)
    names = {system.pk: system.name for system in systems}
    rows = judgements_in_set(benchmark_version, judge_config, DIALOGUES).values_list(
        "output__system_id",
        "output__item_id",
        "output__item__scenario",
        "stage",
        "score",
        "output__item__dialogue_id",
        "output__item__turn",
    )
    records = [
        TurnRecord(StageRecord(names[system_id], item_id, scenario, stage, score), dialogue_id, turn or 0)
        for system_id, item_id, scenario, stage, score, dialogue_id, turn in rows
    ]
    expected = expected_item_rows(benchmark_version, judge_config, DIALOGUES)
    by_turn: dict[int, dict[str, int]] = defaultdict(dict)
    for turn, scenario, count in expected.values_list("turn", "scenario").annotate(n=Count("pk")):
        by_turn[turn or 0][scenario] = count
    n_dialogues = expected.values("dialogue_id").distinct().count()
    board = dialogue_board(records, [system.name for system in systems], threshold, by_turn, n_dialogues)
    return ResultsDialogueBoard(board, systems, len(records))
