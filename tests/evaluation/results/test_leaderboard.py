import csv
import io

import pytest

from evaluation.results.leaderboard import StageRecord, build_leaderboard, scores_by_system, to_csv, to_latex
from tests.evaluation.results.hand_computed import EXPECTED_A, cell_values, stage_records

RECORDS = stage_records()


def test_table_two_values_by_hand():
    table = build_leaderboard(RECORDS, systems=["A", "B", "C"])
    a, b, c = table.rows
    assert cell_values(a) == pytest.approx(EXPECTED_A)
    assert cell_values(b) == pytest.approx(
        {
            "perception_implicit": 6.0,
            "perception_audio_dominant": 4.0,
            "perception_modality_conflict": 6.0,
            "perception_high_arousal": 8.0,
            "perception_emotion_shift": 2.0,
            "perception_avg": 32 / 6,
            "reasoning_avg": 5.0,
            "response_content": 3.4,
            "response_audio": None,
            "response_avg": None,  # audio not judged: 3.4 is out of 5, not Content + Audio
            "all_avg": None,
        }
    )
    assert cell_values(c)["perception_avg"] == 7.0
    assert cell_values(c)["all_avg"] is None


def test_judge_errors_are_counted_not_averaged():
    a, b, _ = build_leaderboard(RECORDS, systems=["A", "B", "C"]).rows
    conflict = a.cells["perception_modality_conflict"]
    assert (conflict.n_valid, conflict.n_excluded) == (0, 1)
    assert (a.cells["perception_avg"].n_valid, a.cells["perception_avg"].n_excluded) == (5, 1)
    assert (a.cells["reasoning_avg"].n_valid, a.cells["reasoning_avg"].n_excluded) == (5, 1)
    assert (b.cells["response_content"].n_valid, b.cells["response_content"].n_excluded) == (5, 1)
    assert (b.cells["response_audio"].n_valid, b.cells["response_audio"].n_excluded) == (0, 0)


def test_top_two_marks_with_ties():
    a, b, c = build_leaderboard(RECORDS, systems=["A", "B", "C"]).rows
    # Implicit: A 7.0 and C 7.0 tie for best, B 6.0 second
    assert [row.cells["perception_implicit"].mark for row in (a, b, c)] == ["best", "second", "best"]
    assert [row.cells["perception_implicit"].tied for row in (a, b, c)] == [True, False, True]
    # Conflict: only B has a value
    assert [row.cells["perception_modality_conflict"].mark for row in (a, b, c)] == [None, "best", None]
    assert [row.cells["perception_modality_conflict"].tied for row in (a, b, c)] == [False] * 3
    # B's Response and All are empty (audio not judged): A alone is marked
    assert [row.cells["all_avg"].mark for row in (a, b, c)] == ["best", None, None]
    assert [row.cells["response_avg"].mark for row in (a, b, c)] == ["best", None, None]


def test_rows_default_to_sorted_system_names():
    assert [row.system for row in build_leaderboard(RECORDS).rows] == ["A", "B", "C"]


def test_csv_has_values_and_counts():
    rows = list(csv.DictReader(io.StringIO(to_csv(build_leaderboard(RECORDS)))))
    assert [row["system"] for row in rows] == ["A", "B", "C"]
    assert rows[0]["all_avg"] == "7.4000"
    assert rows[0]["perception_modality_conflict"] == ""
    assert rows[0]["perception_modality_conflict_n_excluded"] == "1"
    assert rows[1]["perception_avg"] == "5.3333"
    assert rows[1]["response_audio"] == ""
    assert (rows[1]["response_avg"], rows[1]["all_avg"]) == ("", "")
    assert (rows[1]["response_avg_n_valid"], rows[1]["response_avg_n_excluded"]) == ("5", "1")


def test_latex_bolds_best_underlines_second_and_escapes_names():
    records = [*RECORDS, *[StageRecord("Qwen_2.5 & co", "i1", "implicit", "perception", 1.0)]]
    latex = to_latex(build_leaderboard(records, systems=["A", "B", "Qwen_2.5 & co"]))
    lines = latex.splitlines()
    assert lines[0] == r"\begin{tabular}{lccccccccccc}"
    assert r"\multicolumn{6}{c}{Perception$\uparrow$}" in latex
    labels = "Implicit & Neutral & Conflict & Intense & Shift & Avg. & Avg. & Content & Audio & Avg. & Avg."
    assert f" & {labels} \\\\" in lines
    row_a = next(line for line in lines if line.startswith("A &"))
    assert row_a == (
        r"A & \textbf{7.00} & \textbf{7.00} & - & \textbf{9.00} & \textbf{5.00} & \textbf{7.00} & "
        r"\textbf{7.20} & \textbf{4.00} & \textbf{4.00} & \textbf{8.00} & \textbf{7.40} \\"
    )
    row_b = next(line for line in lines if line.startswith("B &"))
    assert row_b.startswith(r"B & \underline{6.00} & \underline{4.00} & \textbf{6.00} & \underline{8.00}")
    assert any(line.startswith(r"Qwen\_2.5 \& co & 1.00") for line in lines)


def test_inconsistent_records_are_refused():
    with pytest.raises(ValueError, match="duplicate"):
        build_leaderboard([RECORDS[0], RECORDS[0]])
    with pytest.raises(ValueError, match="does not apply"):
        build_leaderboard([StageRecord("A", "i6", "emotion-shift", "perception", 5.0)])
    with pytest.raises(ValueError, match="unknown scenario"):
        build_leaderboard([StageRecord("A", "i1", "sarcasm", "perception", 5.0)])


def test_scores_by_system_feeds_paired_tests():
    assert scores_by_system(RECORDS, "reasoning")["A"] == {"i1": 6, "i2": 8, "i4": 7, "i5": 7, "i6": 8}


def test_reproduces_a_row_of_the_paper():
    # Step-Audio2 mini in Table 2, with each item scored at its column's value and Table 10's item
    # counts (220 per scenario, 120 emotion-shift): pooled perception (220 * 11.97 + 120 * 1.41) /
    # 1000 = 2.8026 -> 2.80 as printed; All = (2.8026 + 1.80 + 2.15 + 3.22) / 3 = 3.32 as printed.
    columns = {"implicit": 3.57, "audio-dominant": 3.15, "modality-conflict": 3.12, "high-arousal": 2.13}
    records = []
    for scenario, count, stage, score in [
        *[(scenario, 220, "perception", score) for scenario, score in columns.items()],
        ("emotion-shift", 120, "shift_perception", 1.41),
    ]:
        for n in range(count):
            item = f"{scenario}-{n}"
            records += [
                StageRecord("Step-Audio2 mini", item, scenario, stage, score),
                StageRecord("Step-Audio2 mini", item, scenario, "reasoning", 1.80),
                StageRecord("Step-Audio2 mini", item, scenario, "response_content", 2.15),
                StageRecord("Step-Audio2 mini", item, scenario, "response_audio", 3.22),
            ]
    (row,) = build_leaderboard(records).rows
    shown = {key: f"{cell.value:.2f}" for key, cell in row.cells.items() if cell.value is not None}
    assert (shown["perception_avg"], shown["response_avg"], shown["all_avg"]) == ("2.80", "5.37", "3.32")


def test_three_systems_tied_at_zero_are_marked_as_tied_second_everywhere():
    # Reasoning: A 8, then B, C and D all 0 -> A best; B, C, D share second and say so
    records = [StageRecord("A", "i1", "implicit", "reasoning", 8.0)] + [
        StageRecord(system, "i1", "implicit", "reasoning", 0.0) for system in "BCD"
    ]
    table = build_leaderboard(records)
    cells = [row.cells["reasoning_avg"] for row in table.rows]
    assert [(cell.mark, cell.tied) for cell in cells] == [
        ("best", False),
        ("second", True),
        ("second", True),
        ("second", True),
    ]
    latex = to_latex(table).splitlines()
    assert next(line for line in latex if line.startswith("A &")).count(r"\textbf{8.00} &") == 1
    row_b = next(line for line in latex if line.startswith("B &"))
    assert r"\underline{0.00}$^{=}$" in row_b
    assert latex[-1] == r"% $^{=}$: tied with another system in this column"


def test_latex_has_no_tie_note_without_ties():
    records = [
        StageRecord("A", "i1", "implicit", "reasoning", 8.0),
        StageRecord("B", "i1", "implicit", "reasoning", 1.0),
    ]
    assert "$^{=}$" not in to_latex(build_leaderboard(records))
