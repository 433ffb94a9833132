"""Per-turn tables and dialogue scores carry n of N; a system missing turns is not ranked on them.

Two dialogues d1, d2 of one turn each (implicit). A answered both (perception 5), B only d1
(perception 9): turn 1 Implicit reads A 5.00 over 2/2, best; B 9.00 over 1/2, not comparable.
"""

from __future__ import annotations

from evaluation.results.dialogues.scores import TurnRecord, dialogue_board, to_turn_csv
from evaluation.results.leaderboard import StageRecord

STAGES = (("reasoning", 6.0), ("response_content", 3.0), ("response_audio", 3.0))
RECORDS = [
    TurnRecord(StageRecord(system, f"{dialogue}.t1", "implicit", stage, score), dialogue, 1)
    for system, dialogue, perception in (("A", "d1", 5.0), ("A", "d2", 5.0), ("B", "d1", 9.0))
    for stage, score in (("perception", perception), *STAGES)
]


def test_turn_cells_carry_n_of_n_and_rank_only_complete_systems() -> None:
    board = dialogue_board(RECORDS, ["A", "B"])
    a, b = board.per_turn[1].rows
    assert (a.cells["perception_implicit"].coverage.text, a.cells["perception_implicit"].mark) == (
        "2/2",
        "best",
    )
    implicit = b.cells["perception_implicit"]
    assert (implicit.value, implicit.coverage.text, implicit.comparable, implicit.mark) == (
        9.0,
        "1/2",
        False,
        None,
    )
    assert "turn,system,perception_implicit,perception_implicit_n_valid" in to_turn_csv(board)


def test_dialogue_scores_count_the_dialogues_expected() -> None:
    summaries = {summary.system: summary for summary in dialogue_board(RECORDS, ["A", "B"]).summaries}
    assert [(summaries[name].n_dialogues, summaries[name].n_expected) for name in "AB"] == [(2, 2), (1, 2)]


def test_expected_items_and_dialogues_may_be_given() -> None:
    board = dialogue_board(RECORDS, ["A", "B"], expected_items={1: {"implicit": 3}}, expected_dialogues=3)
    a, _ = board.per_turn[1].rows
    assert (a.cells["perception_implicit"].coverage.text, a.cells["perception_implicit"].mark) == (
        "2/3",
        None,
    )
    assert board.summaries[0].n_expected == 3
