"""Dialogue-level scores and the per-turn Table 2, by hand (pure: no database)."""

from __future__ import annotations

import pytest

from evaluation.results.dialogues.scores import (
    DEFAULT_FALL_THRESHOLD,
    dialogue_board,
    dialogue_score,
    summarise,
    turn_score,
)
from tests.evaluation.results.dialogue_hand_computed import (
    EXPECTED_PER_TURN,
    EXPECTED_SUMMARIES,
    turn_records,
)


def test_a_dialogues_score_is_the_mean_of_its_judged_turns_and_its_first_fall() -> None:
    score = dialogue_score("A", "D1", {1: 8.0, 2: 6.5, 3: 5.0, 4: None, 5: 2.0})
    assert score.mean == pytest.approx((8.0 + 6.5 + 5.0 + 2.0) / 4)
    assert score.first_fall == 3
    assert score.turn_scores == {1: 8.0, 2: 6.5, 3: 5.0, 5: 2.0}


def test_a_turn_at_the_threshold_has_not_fallen() -> None:
    assert dialogue_score("A", "D1", {1: 6.0, 2: 7.0}).first_fall is None
    assert dialogue_score("A", "D1", {1: 5.99, 2: 7.0}).first_fall == 1
    assert DEFAULT_FALL_THRESHOLD == 6.0


def test_the_threshold_is_a_parameter() -> None:
    assert dialogue_score("A", "D1", {1: 8.0, 2: 7.0}, threshold=7.5).first_fall == 2


def test_a_dialogue_with_no_judged_turn_has_no_score() -> None:
    score = dialogue_score("A", "D1", {1: None, 2: None})
    assert (score.mean, score.first_fall) == (None, None)
    summary = summarise("A", [score])
    assert (summary.n_dialogues, summary.mean, summary.share_fell) == (0, None, None)


def test_a_turns_overall_score_is_table_twos_all_of_the_one_output() -> None:
    assert turn_score({"perception": 6, "reasoning": 7, "response_content": 4, "response_audio": 3}) == (
        pytest.approx(20 / 3)
    )
    assert turn_score(
        {"shift_perception": 4, "reasoning": 5, "response_content": 3, "response_audio": 3}
    ) == pytest.approx(5.0)
    # audio not judged: content alone is out of 5, not Table 2's response out of 10, so the turn has
    # no overall score and cannot "fall below 6.0" on a mixed scale
    assert turn_score({"perception": 5, "reasoning": 6, "response_content": 3}) is None
    assert turn_score({"perception": 9, "reasoning": 9, "response_content": 5}) is None
    # a judge error (or a missing stage) leaves the turn unjudged
    assert turn_score({"perception": 6, "reasoning": None, "response_content": 4}) is None
    assert turn_score({"perception": 6, "response_content": 4}) is None


def test_dialogue_level_figures_by_hand() -> None:
    board = dialogue_board(turn_records(), ["A", "B"])
    for summary in board.summaries:
        expected = EXPECTED_SUMMARIES[summary.system]
        assert summary.mean == pytest.approx(expected["mean"])
        assert (summary.n_dialogues, summary.n_fell, summary.share_fell, summary.fell_at) == (
            expected["n_dialogues"],
            expected["n_fell"],
            expected["share_fell"],
            expected["fell_at"],
        )
    by_dialogue = {(score.system, score.dialogue): (score.mean, score.first_fall) for score in board.scores}
    expected_dialogues = {
        ("A", "D1"): (59 / 9, 3),
        ("A", "D2"): (8.5, None),
        ("B", "D1"): (None, None),  # no turn judged on the 10-point scale (audio not judged)
        ("B", "D2"): (None, None),
    }
    assert set(by_dialogue) == set(expected_dialogues)
    for key, (mean, first_fall) in expected_dialogues.items():
        assert by_dialogue[key] == (mean if mean is None else pytest.approx(mean), first_fall)


def test_per_turn_table_two_by_hand() -> None:
    board = dialogue_board(turn_records(), ["A", "B"])
    assert board.turns == (1, 2, 3)
    for turn, expected in EXPECTED_PER_TURN.items():
        rows = {row.system: row for row in board.per_turn[turn].rows}
        for system, values in expected.items():
            got = {key: rows[system].cells[key].value for key in values}
            assert got == pytest.approx(values), (turn, system)
    turn_two_a = {row.system: row for row in board.per_turn[2].rows}["A"].cells
    assert (turn_two_a["perception_high_arousal"].value, turn_two_a["perception_implicit"].value) == (6, 7)
    assert turn_two_a["reasoning_avg"].n_excluded == 1
    turn_three_a = {row.system: row for row in board.per_turn[3].rows}["A"].cells
    assert (
        turn_three_a["perception_emotion_shift"].value,
        turn_three_a["perception_audio_dominant"].value,
    ) == (4, 8)
    assert [row.cells["all_avg"].mark for row in board.per_turn[1].rows] == ["best", None]


def test_a_stricter_threshold_moves_the_falls() -> None:
    board = dialogue_board(turn_records(), ["A", "B"], threshold=8.5)
    assert board.threshold == 8.5
    summaries = {summary.system: summary for summary in board.summaries}
    # A D1 turn 1 (8.0) and A D2 turn 2 is unjudged, turn 3 8.3333: both fall, D2 at turn 3
    assert summaries["A"].fell_at == {1: 1, 3: 1}
    assert summaries["B"].fell_at == {}  # never judged on the 10-point scale, so never fell
