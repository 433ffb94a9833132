"""Leaderboard (paper Table 2) from plain stage scores (Table 8 is in `evaluation.results.propagation`).

Input is one `StageRecord` per (system, item, stage): the final capped score, or None when the
judge errored. Judge errors are excluded from every mean and counted (paper C.3: "we aggregate
per-stage scores over valid samples only").

How Table 2 is computed (checked against the paper's own rows):

- Perception per scenario: mean perception score of the system's items in that scenario. Emotion-
  shift items are scored with the shift_perception stage, the other four with perception.
- Perception Avg.: mean over all valid perception items of every scenario pooled (not the mean of
  the five scenario columns). The paper's figures follow this: Step-Audio2 mini's columns 3.57,
  3.15, 3.12, 2.13, 1.41 weighted by the 220/220/220/220/120 items of Table 10 give 2.80, as
  printed, where the unweighted column mean would give 2.68.
- Reasoning Avg.: mean reasoning score over all items.
- Response Content and Audio: mean 1-5 scores; Response Avg. is their sum (a 10-point scale). When
  audio was not judged (a speech-to-text system, or a judge run without attached audio) Audio,
  Response Avg. and All are "-": the paper prints Content alone (out of 5) under a header that
  says Content + Audio out of 10 for MERaLiON and BLSP-Emo, so its All for them mixes scales and
  reaches at most 8.33. We never show a figure on a scale its header does not name; Content
  stays shown on its own 1-5 scale.
- All Avg.: mean of Perception Avg., Reasoning Avg. and Response Avg. (each on a 10-point scale).
  This reproduces every row of Table 2 that has audio scores, e.g. EchoChat (8.23 + 8.43 + 9.26)
  / 3 = 8.64. All is "-" when a system has no valid score at all for one of the three stages.

Top two per column (higher is better everywhere) are marked "best" and "second", compared on the
two-decimal values that are displayed, so ties share a mark; a marked value shared by another
system is flagged `tied` and every renderer says so ("=" on the page, the client and in LaTeX),
so three systems at 0.00 read as tied for second, not as three second-best systems.

Coverage (`webapp.lib.coverage`): each cell carries n (valid judgements behind its mean) and N
(judgements expected of every system: one per expected item and stage, the expected items being
those of the version that any system was asked; in the scenario columns, that scenario's). A cell
is marked only when it is comparable: its system was judged on every expected item of the column
(a judge error counts as judged, and is excluded and counted). A system that answered 3 of 9
items shows its means with n/N and a "not comparable" flag, and is never marked above one that
answered all 9.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from evaluation.judging.rubrics import (
    PERCEPTION,
    REASONING,
    RESPONSE_AUDIO,
    RESPONSE_CONTENT,
    SHIFT_PERCEPTION,
    STAGES,
)
from webapp.lib.coverage import Coverage, comparable
from webapp.lib.latex import latex_escape
from webapp.lib.spreadsheet import NeutralWriter
from webapp.lib.vocabulary import (
    AUDIO_DOMINANT,
    EMOTION_SHIFT,
    HIGH_AROUSAL,
    IMPLICIT,
    MODALITY_CONFLICT,
    SCENARIOS,
)

Mark = Literal["best", "second"]
_MARKS: tuple[Mark, Mark] = ("best", "second")


@dataclass(frozen=True)
class StageRecord:
    system: str
    item_id: Hashable
    scenario: str
    stage: str
    score: float | None  # None: the judge errored on this output


@dataclass(frozen=True)
class Column:
    key: str
    group: str  # the paper's top header: Perception, Reasoning, Response, All
    label: str  # the paper's second header


COLUMNS: tuple[Column, ...] = (
    Column("perception_implicit", "Perception", "Implicit"),
    Column("perception_audio_dominant", "Perception", "Neutral"),
    Column("perception_modality_conflict", "Perception", "Conflict"),
    Column("perception_high_arousal", "Perception", "Intense"),
    Column("perception_emotion_shift", "Perception", "Shift"),
    Column("perception_avg", "Perception", "Avg."),
    Column("reasoning_avg", "Reasoning", "Avg."),
    Column("response_content", "Response", "Content"),
    Column("response_audio", "Response", "Audio"),
    Column("response_avg", "Response", "Avg."),
    Column("all_avg", "All", "Avg."),
)

SCENARIO_COLUMNS: dict[str, str] = {
    IMPLICIT: "perception_implicit",
    AUDIO_DOMINANT: "perception_audio_dominant",
    MODALITY_CONFLICT: "perception_modality_conflict",
    HIGH_AROUSAL: "perception_high_arousal",
    EMOTION_SHIFT: "perception_emotion_shift",
}


@dataclass(frozen=True)
class Cell:
    value: float | None  # None: nothing valid to average (shown as "-")
    n_valid: int  # n: the valid judgements behind the mean
    n_excluded: int  # judge errors left out of the mean
    n_expected: int = 0  # N: the judgements expected of every system in this column
    mark: Mark | None = None
    tied: bool = False  # the mark is shared: another system shows the same value in this column

    @property
    def coverage(self) -> Coverage:
        """Return n of N: the valid judgements behind the mean, of those expected."""
        return Coverage(self.n_valid, self.n_expected)

    @property
    def comparable(self) -> bool:
        """Return whether the cell may be ranked: judged on every expected item (`webapp.lib.coverage`)."""
        return comparable(self.n_valid + self.n_excluded, self.n_expected)


@dataclass(frozen=True)
class LeaderboardRow:
    system: str
    cells: dict[str, Cell]


@dataclass(frozen=True)
class Leaderboard:
    columns: tuple[Column, ...]
    rows: list[LeaderboardRow] = field(default_factory=list)


def build_leaderboard(
    records: Iterable[StageRecord],
    systems: Sequence[str] | None = None,
    expected_items: Mapping[str, int] | None = None,
) -> Leaderboard:
    """Return the Table-2 leaderboard; rows follow `systems` (default: sorted system names).

    `expected_items` is the number of items expected of every system per scenario (default: the
    items any record names, per scenario)."""
    scores = index_records(records)
    by_system: dict[str, list[tuple[str, str, float | None]]] = defaultdict(list)
    items: dict[str, set[Hashable]] = defaultdict(set)
    for (system, item, stage), (scenario, score) in scores.items():
        by_system[system].append((scenario, stage, score))
        items[scenario].add(item)
    expected = column_expectations(
        expected_items if expected_items is not None else {name: len(found) for name, found in items.items()}
    )
    unmarked = [
        LeaderboardRow(system, with_expectations(_system_cells(by_system.get(system, [])), expected))
        for system in (systems if systems is not None else sorted(by_system))
    ]
    return Leaderboard(columns=COLUMNS, rows=mark_top_two(unmarked))


def column_expectations(expected_items: Mapping[str, int]) -> dict[str, int]:
    """Return N per column: the judgements expected of a system, from the items expected per scenario.

    A scenario column expects one perception judgement per item of its scenario; the stage averages
    one per item; Response Avg. two (content and audio) and All four, as their n counts judgements."""
    total = sum(expected_items.values())
    expected = {column: expected_items.get(scenario, 0) for scenario, column in SCENARIO_COLUMNS.items()}
    for column in ("perception_avg", "reasoning_avg", "response_content", "response_audio"):
        expected[column] = total
    expected["response_avg"] = 2 * total
    expected["all_avg"] = 4 * total
    return expected


def with_expectations(cells: Mapping[str, Cell], expected: Mapping[str, int]) -> dict[str, Cell]:
    """Return the cells with their column's N."""
    return {key: replace(cell, n_expected=expected[key]) for key, cell in cells.items()}


def index_records(
    records: Iterable[StageRecord],
) -> dict[tuple[str, Hashable, str], tuple[str, float | None]]:
    indexed: dict[tuple[str, Hashable, str], tuple[str, float | None]] = {}
    for record in records:
        if record.stage not in STAGES:
            raise ValueError(f"unknown stage {record.stage!r}")
        if record.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {record.scenario!r}")
        # Emotion-shift items are judged by the shift rubric only; a plain perception score on
        # one (or a shift score elsewhere) means the judging run was set up wrongly.
        if (record.stage == PERCEPTION and record.scenario == EMOTION_SHIFT) or (
            record.stage == SHIFT_PERCEPTION and record.scenario != EMOTION_SHIFT
        ):
            raise ValueError(f"stage {record.stage} does not apply to a {record.scenario} item")
        key = (record.system, record.item_id, record.stage)
        if key in indexed:
            raise ValueError(f"duplicate score for {key}")
        indexed[key] = (record.scenario, record.score)
    return indexed


def _mean_cell(scores: Sequence[float | None]) -> Cell:
    valid = [score for score in scores if score is not None]
    return Cell(
        value=sum(valid) / len(valid) if valid else None,
        n_valid=len(valid),
        n_excluded=len(scores) - len(valid),
    )


def _system_cells(entries: Sequence[tuple[str, str, float | None]]) -> dict[str, Cell]:
    perception = [
        (scenario, score) for scenario, stage, score in entries if stage in (PERCEPTION, SHIFT_PERCEPTION)
    ]
    cells = {
        column: _mean_cell([score for scenario, score in perception if scenario == name])
        for name, column in SCENARIO_COLUMNS.items()
    }
    cells["perception_avg"] = _mean_cell([score for _, score in perception])
    for column, stage in (
        ("reasoning_avg", REASONING),
        ("response_content", RESPONSE_CONTENT),
        ("response_audio", RESPONSE_AUDIO),
    ):
        cells[column] = _mean_cell([score for _, s, score in entries if s == stage])

    content, audio = cells["response_content"], cells["response_audio"]
    cells["response_avg"] = Cell(
        value=response_average(content.value, audio.value),
        n_valid=content.n_valid + audio.n_valid,
        n_excluded=content.n_excluded + audio.n_excluded,
    )
    stage_cells = (cells["perception_avg"], cells["reasoning_avg"], cells["response_avg"])
    cells["all_avg"] = Cell(
        value=all_average(*(cell.value for cell in stage_cells)),
        n_valid=sum(cell.n_valid for cell in stage_cells),
        n_excluded=sum(cell.n_excluded for cell in stage_cells),
    )
    return cells


def response_average(content: float | None, audio: float | None) -> float | None:
    """Return Table 2's Response Avg.: Content + Audio, out of 10; None when either is missing (Content
    alone is out of 5, so it is never shown under this header). The one rule of the leaderboard, its
    exports, the API and the dialogue turn scores."""
    if content is None or audio is None:
        return None
    return content + audio


def all_average(perception: float | None, reasoning: float | None, response: float | None) -> float | None:
    """Return Table 2's All Avg.: the mean of the three stage averages; None when one is missing
    (a system missing a whole stage has no comparable overall score)."""
    if perception is None or reasoning is None or response is None:
        return None
    return (perception + reasoning + response) / 3


def mark_top_two(rows: Sequence[LeaderboardRow]) -> list[LeaderboardRow]:
    """Return the rows with the top two comparable values of each column marked (ties share a mark);
    a cell measured on fewer items than expected is never marked."""
    marks: dict[tuple[str, str], tuple[Mark, bool]] = {}
    for column in COLUMNS:
        shown = {
            row.system: round(value, 2)
            for row in rows
            if (value := (cell := row.cells[column.key]).value) is not None and cell.comparable
        }
        distinct = sorted(set(shown.values()), reverse=True)
        for rank, mark in enumerate(_MARKS):
            if rank < len(distinct):
                sharing = [system for system, value in shown.items() if value == distinct[rank]]
                for system in sharing:
                    marks[(system, column.key)] = (mark, len(sharing) > 1)
    return [
        LeaderboardRow(
            row.system,
            {key: _marked(cell, marks.get((row.system, key))) for key, cell in row.cells.items()},
        )
        for row in rows
    ]


def _marked(cell: Cell, mark: tuple[Mark, bool] | None) -> Cell:
    if mark is None:
        return replace(cell, mark=None, tied=False)
    return replace(cell, mark=mark[0], tied=mark[1])


# --- Renderers ------------------------------------------------------------------------------------


def to_csv(table: Leaderboard) -> str:
    """Return the leaderboard as CSV: per column its value (4 decimals, empty for "-"), its counts
    (n valid, excluded, N expected) and whether it is comparable (ranked)."""
    buffer = io.StringIO()
    writer = NeutralWriter(buffer)
    header = ["system"]
    for column in table.columns:
        header += [
            column.key,
            f"{column.key}_n_valid",
            f"{column.key}_n_excluded",
            f"{column.key}_n_expected",
            f"{column.key}_comparable",
        ]
    writer.writerow(header)
    for row in table.rows:
        line = [row.system]
        for column in table.columns:
            cell = row.cells[column.key]
            line += [
                "" if cell.value is None else f"{cell.value:.4f}",
                str(cell.n_valid),
                str(cell.n_excluded),
                str(cell.n_expected),
                "yes" if cell.comparable else "no",
            ]
        writer.writerow(line)
    return buffer.getvalue()


def to_latex(table: Leaderboard) -> str:
    """Return a LaTeX tabular in the layout of the paper's Table 2 (best bold, second underlined)."""
    groups: list[tuple[str, int]] = []
    for column in table.columns:
        if groups and groups[-1][0] == column.group:
            groups[-1] = (column.group, groups[-1][1] + 1)
        else:
            groups.append((column.group, 1))
    group_header = " & ".join(rf"\multicolumn{{{span}}}{{c}}{{{name}$\uparrow$}}" for name, span in groups)
    label_header = " & ".join(column.label for column in table.columns)
    lines = [
        r"\begin{tabular}{l" + "c" * len(table.columns) + "}",
        r"\toprule",
        rf"\multirow{{2}}{{*}}{{Models}} & {group_header} \\",
        rf" & {label_header} \\",
        r"\midrule",
    ]
    for row in table.rows:
        values = [_latex_cell(row.cells[column.key]) for column in table.columns]
        lines.append(f"{latex_escape(row.system)} & {' & '.join(values)} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += _latex_coverage_notes(table)
    if any(cell.tied for row in table.rows for cell in row.cells.values()):
        lines.append(TIE_NOTE_LATEX)
    return "\n".join(lines) + "\n"


TIE_NOTE_LATEX = r"% $^{=}$: tied with another system in this column"
NOT_COMPARABLE_LATEX = r"$^{\dagger}$"


def _latex_coverage_notes(table: Leaderboard) -> list[str]:
    """Return the notes under the tabular (paragraphs, so they wrap at the page's width): the N every
    unflagged cell stands on, and n/N of each flagged cell (a figure, not comparable) by system and column."""
    expected = {column.key: 0 for column in table.columns}
    for row in table.rows:
        for key, cell in row.cells.items():
            expected[key] = max(expected[key], cell.n_expected)
    items = expected.get("reasoning_avg", 0)
    notes = [
        rf"\par{{\footnotesize Over {items} items per stage (n/N judgements per cell in the CSV export).}}"
    ]
    partial = []
    for row in table.rows:
        flagged = [
            f"{column.group} {column.label} {row.cells[column.key].coverage.text}"
            for column in table.columns
            if not row.cells[column.key].comparable and row.cells[column.key].value is not None
        ]
        if flagged:
            partial.append(f"{latex_escape(row.system)}: {', '.join(flagged)}")
    if partial:
        notes.append(
            rf"\par{{\footnotesize {NOT_COMPARABLE_LATEX} not comparable, measured on fewer items than "
            rf"expected (n/N), never marked: {'; '.join(partial)}.}}"
        )
    return notes


def _latex_cell(cell: Cell) -> str:
    if cell.value is None:
        return "-"
    text = f"{cell.value:.2f}"
    if not cell.comparable:
        return text + NOT_COMPARABLE_LATEX
    tie = "$^{=}$" if cell.tied else ""
    if cell.mark == "best":
        return rf"\textbf{{{text}}}{tie}"
    if cell.mark == "second":
        return rf"\underline{{{text}}}{tie}"
    return text


def scores_by_system(records: Iterable[StageRecord], stage: str) -> Mapping[str, dict[Hashable, float]]:
    """Return {system: {item: score}} of one stage's valid scores, the input of pairwise_wilcoxon_holm."""
    result: dict[str, dict[Hashable, float]] = defaultdict(dict)
    for (system, item, record_stage), (_scenario, score) in index_records(records).items():
        if record_stage == stage and score is not None:
            result[system][item] = score
    return dict(result)
