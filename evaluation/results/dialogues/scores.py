"""Dialogue results from plain stage scores (pure): Table 2 per turn, and dialogue-level scores.

Input is one `TurnRecord` per (system, dialogue turn, stage): the stage record the single-turn
leaderboard reads, with the dialogue and the turn it belongs to.

- Per turn: the Table-2 leaderboard of every system's outputs for that turn index (turn 1 of
  every dialogue, turn 2 of every dialogue, ...), by the rules of `evaluation.results.leaderboard`.
- A turn's overall score: Table 2's All of that one output, (perception + reasoning + response)
  / 3 on the 10-point scale, response = content + audio (`response_average`: none when audio was
  not judged, so the fall threshold never compares a mixed-scale figure). A turn missing a valid
  stage score, audio included, has none and is left out ("not judged").
- A dialogue's score, per system: the mean of its judged turns' overall scores, and the first
  turn whose overall score fell below `DEFAULT_FALL_THRESHOLD` (None when none did).
- Per system: the mean of its dialogue scores, the share of its dialogues that fell, and at which
  turn they first fell.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
)
from evaluation.results.leaderboard import (
    Leaderboard,
    StageRecord,
    all_average,
    build_leaderboard,
    response_average,
    to_csv,
    to_latex,
)
from webapp.lib.spreadsheet import NeutralWriter

# The one place the fall threshold lives. The turn score is on Table 2's 10-point All scale, so
# 6.0 is 3.0 on the 1-5 scale the human studies rate on ("neither helpful nor unhelpful").
DEFAULT_FALL_THRESHOLD = 6.0


@dataclass(frozen=True)
class TurnRecord:
    record: StageRecord
    dialogue: Hashable
    turn: int  # 1-based


@dataclass(frozen=True)
class DialogueScore:
    system: str
    dialogue: Hashable
    turn_scores: dict[int, float]  # the judged turns' overall scores, by turn
    mean: float | None  # None: no turn of this dialogue was judged
    first_fall: int | None  # the first turn scored below the threshold; None when none was


@dataclass(frozen=True)
class DialogueSummary:
    system: str
    n_dialogues: int  # dialogues with at least one judged turn
    mean: float | None  # mean of those dialogues' scores
    n_fell: int
    share_fell: float | None
    fell_at: dict[int, int]  # turn -> dialogues that first fell there
    n_expected: int = 0  # N: the dialogues any system has a judged turn of


@dataclass(frozen=True)
class DialogueBoard:
    threshold: float
    turns: tuple[int, ...]
    per_turn: dict[int, Leaderboard]
    summaries: list[DialogueSummary]  # in the order of the systems
    scores: list[DialogueScore]


def turn_score(stage_scores: Mapping[str, float | None]) -> float | None:
    """Return one turn's overall score (Table 2's All of a single output) from its stage scores."""
    perception = stage_scores.get(SHIFT_PERCEPTION, stage_scores.get(PERCEPTION))
    response = response_average(stage_scores.get(RESPONSE_CONTENT), stage_scores.get(RESPONSE_AUDIO))
    return all_average(perception, stage_scores.get(REASONING), response)


def dialogue_score(
    system: str,
    dialogue: Hashable,
    turn_scores: Mapping[int, float | None],
    threshold: float = DEFAULT_FALL_THRESHOLD,
) -> DialogueScore:
    """Return a dialogue's score for one system from its turns' overall scores (None: not judged)."""
    judged = {turn: score for turn, score in sorted(turn_scores.items()) if score is not None}
    return DialogueScore(
        system=system,
        dialogue=dialogue,
        turn_scores=judged,
        mean=sum(judged.values()) / len(judged) if judged else None,
        first_fall=next((turn for turn, score in judged.items() if score < threshold), None),
    )


def summarise(system: str, scores: Iterable[DialogueScore], n_expected: int = 0) -> DialogueSummary:
    """Return one system's dialogue-level figures from its dialogues' scores, out of `n_expected`
    dialogues."""
    judged = [score for score in scores if score.mean is not None]
    falls = Counter(score.first_fall for score in judged if score.first_fall is not None)
    n_fell = sum(falls.values())
    return DialogueSummary(
        system=system,
        n_dialogues=len(judged),
        mean=sum(score.mean for score in judged if score.mean is not None) / len(judged) if judged else None,
        n_fell=n_fell,
        share_fell=n_fell / len(judged) if judged else None,
        fell_at=dict(sorted(falls.items())),
        n_expected=n_expected,
    )


def dialogue_board(
    records: Iterable[TurnRecord],
    systems: Sequence[str] | None = None,
    threshold: float = DEFAULT_FALL_THRESHOLD,
    expected_items: Mapping[int, Mapping[str, int]] | None = None,
    expected_dialogues: int | None = None,
) -> DialogueBoard:
    """Return the per-turn Table 2 and the dialogue-level scores; rows follow `systems`.

    N of the figures: `expected_items`, per turn index the items expected of every system per
    scenario, and `expected_dialogues` (default: the turns and dialogues any record names)."""
    records = list(records)
    names = list(systems) if systems is not None else sorted({turn.record.system for turn in records})
    by_turn: dict[int, list[StageRecord]] = defaultdict(list)
    stages: dict[tuple[str, Hashable, int], dict[str, float | None]] = defaultdict(dict)
    for turn_record in records:
        record = turn_record.record
        by_turn[turn_record.turn].append(record)
        stages[(record.system, turn_record.dialogue, turn_record.turn)][record.stage] = record.score
    turns: dict[tuple[str, Hashable], dict[int, float | None]] = defaultdict(dict)
    # The per-turn tables expect, of every system, the turns any system was judged on; the dialogue
    # scores, the dialogues any system was judged on.
    dialogues = {dialogue for (_system, dialogue, _turn) in stages}
    for (system, dialogue, turn), stage_scores in stages.items():
        turns[(system, dialogue)][turn] = turn_score(stage_scores)
    scores = [
        dialogue_score(system, dialogue, turn_scores, threshold)
        for (system, dialogue), turn_scores in sorted(turns.items(), key=lambda entry: str(entry[0]))
    ]
    return DialogueBoard(
        threshold=threshold,
        turns=tuple(sorted(by_turn)),
        per_turn={
            turn: build_leaderboard(
                by_turn[turn], names, None if expected_items is None else expected_items.get(turn, {})
            )
            for turn in sorted(by_turn)
        },
        summaries=[
            summarise(
                name,
                (score for score in scores if score.system == name),
                len(dialogues) if expected_dialogues is None else expected_dialogues,
            )
            for name in names
        ],
        scores=scores,
    )


def to_turn_csv(board: DialogueBoard) -> str:
    """Return the per-turn Table 2 as one CSV: the leaderboard CSV's columns after a `turn` column."""
    # Read back as CSV, never split into lines: a quoted system name may hold a line or record break.
    buffer = io.StringIO()
    writer = NeutralWriter(buffer)
    wrote_header = False
    for turn in board.turns:
        header, *rows = csv.reader(io.StringIO(to_csv(board.per_turn[turn]), newline=""))
        if not wrote_header:
            writer.writerow(["turn", *header])
            wrote_header = True
        for row in rows:
            writer.writerow([turn, *row])
    return buffer.getvalue() if wrote_header else "turn,system\n"


def to_turn_latex(board: DialogueBoard) -> str:
    """Return one Table-2 tabular per turn, each after a comment naming its turn."""
    return "".join(f"% Turn {turn}\n{to_latex(board.per_turn[turn])}" for turn in board.turns)
