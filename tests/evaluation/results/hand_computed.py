"""The small leaderboard set computed by hand: the pure-module tests build records from it, the page
tests store it as judgements, and both check the same expected rows."""

from __future__ import annotations

from evaluation.results.leaderboard import LeaderboardRow, StageRecord

ITEM_SCENARIOS = {
    "i1": "implicit",
    "i2": "implicit",
    "i3": "audio-dominant",
    "i4": "modality-conflict",
    "i5": "high-arousal",
    "i6": "emotion-shift",
}

# System A (speech out):
#   perception  i1 8, i2 6, i3 7, i4 judge error, i5 9, shift i6 5
#     -> Implicit 7.0, Neutral 7.0, Conflict "-" (0 valid, 1 excluded), Intense 9.0, Shift 5.0
#     -> Avg. pooled over items (8+6+7+9+5)/5 = 7.0, 5 valid, 1 excluded
#   reasoning   6, 8, error, 7, 7, 8 -> 36/5 = 7.2
#   content     4, 4, 3, 5, 4, 4 -> 4.0; audio 4, 5, 4, 4, 3, 4 -> 4.0; response 8.0
#   All = (7.0 + 7.2 + 8.0) / 3 = 7.4; 22 valid, 2 excluded
# System B (speech-to-text, no audio):
#   perception  i1 5, i2 7, i3 4, i4 6, i5 8, shift i6 2
#     -> Implicit 6.0, Neutral 4, Conflict 6, Intense 8, Shift 2
#     -> Avg. pooled 32/6 = 5.3333 (the mean of the five columns would be 5.2)
#   reasoning   4, 6, 5, 5, 5, 5 -> 5.0
#   content     3, 3, 4, 4, 3, error -> 17/5 = 3.4 (out of 5); audio "-" (not judged)
#   -> Response Avg. "-" and All "-": 3.4 is out of 5, not Content + Audio out of 10, so it is not
#      shown under that header (nor averaged into All); counts still add up: response 5 valid,
#      1 excluded; All 17 valid, 1 excluded
# System C: only implicit perception 7, 7 -> Implicit 7.0 and Avg. 7.0, no other stage, All "-".
SCORES: dict[str, dict[str, dict[str, float | None]]] = {
    "A": {
        "perception": {"i1": 8, "i2": 6, "i3": 7, "i4": None, "i5": 9, "i6": 5},
        "reasoning": {"i1": 6, "i2": 8, "i3": None, "i4": 7, "i5": 7, "i6": 8},
        "response_content": {"i1": 4, "i2": 4, "i3": 3, "i4": 5, "i5": 4, "i6": 4},
        "response_audio": {"i1": 4, "i2": 5, "i3": 4, "i4": 4, "i5": 3, "i6": 4},
    },
    "B": {
        "perception": {"i1": 5, "i2": 7, "i3": 4, "i4": 6, "i5": 8, "i6": 2},
        "reasoning": {"i1": 4, "i2": 6, "i3": 5, "i4": 5, "i5": 5, "i6": 5},
        "response_content": {"i1": 3, "i2": 3, "i3": 4, "i4": 4, "i5": 3, "i6": None},
    },
    "C": {"perception": {"i1": 7, "i2": 7}},
}

EXPECTED_A = {
    "perception_implicit": 7.0,
    "perception_audio_dominant": 7.0,
    "perception_modality_conflict": None,
    "perception_high_arousal": 9.0,
    "perception_emotion_shift": 5.0,
    "perception_avg": 7.0,
    "reasoning_avg": 7.2,
    "response_content": 4.0,
    "response_audio": 4.0,
    "response_avg": 8.0,
    "all_avg": 7.4,
}


def judged_stage(stage: str, item_id: str) -> str:
    """Return the stage a judge scores: perception of an emotion-shift item has a rubric of its own."""
    if stage == "perception" and ITEM_SCENARIOS[item_id] == "emotion-shift":
        return "shift_perception"
    return stage


def stage_records() -> list[StageRecord]:
    """Return SCORES as the records the pure leaderboard module reads."""
    return [
        StageRecord(system, item_id, ITEM_SCENARIOS[item_id], judged_stage(stage, item_id), score)
        for system, stages in SCORES.items()
        for stage, by_item in stages.items()
        for item_id, score in by_item.items()
    ]


def cell_values(row: LeaderboardRow) -> dict[str, float | None]:
    """Return a leaderboard row's values by column key."""
    return {key: cell.value for key, cell in row.cells.items()}
