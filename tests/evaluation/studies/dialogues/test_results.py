"""Figures of a dialogue study: the single-turn statistics over rated turns, plus MOS by turn, checked by hand."""

from __future__ import annotations

import csv
import functools
import io

import pytest
from django.urls import reverse

from evaluation.studies.reports import study_rating_rows, summarise_study
from evaluation.studies.results import mos_by_turn, summarise_ratings, summary_csv
from evaluation.studies.screening import RatingRow
from tests.evaluation.studies.dialogues.support import (
    build_dialogue_world,
    make_dialogue_study,
    play_and_rate_dialogue,
)
from tests.evaluation.studies.support import current

T_975_1 = 12.706204736  # t quantile, 1 degree of freedom
T_975_2 = 4.302652730  # 2 degrees of freedom


def _row(rater: str, stimulus: str, system: str, turn: int, score: int, kind: str = "rated") -> RatingRow:
    return RatingRow(
        rater=rater,
        stimulus=f"{stimulus}#t{turn}",
        kind=kind,  # type: ignore[arg-type]
        system=system,
        item=f"{stimulus}.t{turn}",
        dimension="naturalness",
        score=score,
        turn=turn,
    )


ROWS = [
    # A, turn 1: dialogue s1 rated 4 and 2 (mean 3), s2 rated 5: MOS 4, t interval 4 +- t(1) * sd 1.414 / sqrt 2
    _row("r1", "s1", "A", 1, 4),
    _row("r2", "s1", "A", 1, 2),
    _row("r1", "s2", "A", 1, 5),
    # A, turn 2: one dialogue (mean 3): no interval
    _row("r1", "s1", "A", 2, 3),
    _row("r2", "s1", "A", 2, 3),
    # B, turn 1: three dialogues 1, 2, 3: MOS 2, t interval 2 +- t(2) * 1 / sqrt 3
    _row("r1", "s3", "B", 1, 1),
    _row("r1", "s4", "B", 1, 2),
    _row("r2", "s5", "B", 1, 3),
]


def test_mos_by_turn_matches_hand_computed_values():
    cells = mos_by_turn(ROWS, ["A", "B"], ["naturalness"])
    # N by default: the dialogues any row of the system names at that turn
    assert [cells[("A", "naturalness", turn)].coverage.text for turn in (1, 2)] == ["2/2", "1/1"]
    assert (
        mos_by_turn(ROWS, ["A"], ["naturalness"], {("A", 2): 2})[("A", "naturalness", 2)].coverage.text
        == "1/2"
    )

    a1, a2 = cells[("A", "naturalness", 1)], cells[("A", "naturalness", 2)]
    assert (a1.mean, a1.n_outputs, a1.n_ratings) == (4.0, 2, 3)
    assert a1.low == pytest.approx(4.0 - T_975_1) and a1.high == pytest.approx(4.0 + T_975_1)
    assert (a2.mean, a2.low, a2.high, a2.n_outputs, a2.n_ratings) == (3.0, None, None, 1, 2)
    b1, b2 = cells[("B", "naturalness", 1)], cells[("B", "naturalness", 2)]
    half = T_975_2 / 3**0.5
    assert b1.mean == pytest.approx(2.0)
    assert (b1.low, b1.high) == (pytest.approx(2.0 - half), pytest.approx(2.0 + half))
    assert (b2.mean, b2.n_outputs, b2.n_ratings) == (None, 0, 0)


def test_excluded_raters_and_unrated_kinds_stay_out_of_the_turn_figures():
    noisy = [*ROWS, _row("r3", "s2", "A", 1, 1), _row("r1", "s9", "A", 1, 1, kind="training")]
    summary = summarise_ratings(
        noisy, ["A", "B"], ["naturalness"], excluded_raters=["r3"], n_boot=50, per_turn=True
    )

    assert summary.turns == (1, 2)
    assert summary.turn_cell("A", "naturalness", 1).mean == 4.0
    # every rated turn is one output of the whole-study MOS: A's are 3, 5 (turn 1) and 3 (turn 2)
    assert summary.cell("A", "naturalness").mean == pytest.approx(11 / 3)
    assert summary.cell("A", "naturalness").n_outputs == 3
    assert summarise_ratings(ROWS, ["A", "B"], ["naturalness"], n_boot=50).by_turn == {}


def _turn_plus(turn: int, dimension: str, bonus: int) -> int:
    return turn + bonus


@pytest.fixture
def rated_study(make_user, users):
    world = build_dialogue_world(make_user, n_systems=2, n_dialogues=2, turns=2)
    rater = users["evaluator"]
    study = make_dialogue_study(world, [rater], users["admin"], items_per_system=2, seed=4)
    for _ in range(4):
        assignment = current(study, rater)
        bonus = 2 if assignment.stimulus.system_id == world.systems[0].pk else 0  # SecretSystemA
        play_and_rate_dialogue(assignment, functools.partial(_turn_plus, bonus=bonus))
    return study


def test_a_rated_dialogue_study_gives_per_turn_and_whole_study_figures(rated_study):
    rows = study_rating_rows(rated_study)
    assert {row.item for row in rows} == {"DLG-000.t1", "DLG-000.t2", "DLG-001.t1", "DLG-001.t2"}
    assert len({row.stimulus for row in rows}) == 8  # 2 systems x 2 dialogues x 2 turns

    summary = summarise_study(rated_study)

    assert summary.turns == (1, 2)
    for dimension in rated_study.dimensions:
        # SecretSystemA scored turn + 2, SecretSystemB turn, on both dialogues
        assert summary.turn_cell("SecretSystemA", dimension, 1).mean == 3.0
        assert summary.turn_cell("SecretSystemA", dimension, 2).mean == 4.0
        assert summary.turn_cell("SecretSystemB", dimension, 1).mean == 1.0
        assert summary.turn_cell("SecretSystemB", dimension, 2).mean == 2.0
        cell = summary.turn_cell("SecretSystemB", dimension, 2)
        assert (cell.low, cell.high, cell.n_outputs) == (2.0, 2.0, 2)
        assert cell.coverage.text == "2/2"  # both of B's dialogues rated at turn 2
        assert summary.cell("SecretSystemA", dimension).mean == 3.5
        assert summary.cell("SecretSystemB", dimension).n_outputs == 4
        # every rated turn is an output: 4 of B's 4 replies, so its MOS is ranked
        assert summary.cell("SecretSystemB", dimension).coverage.text == "4/4"
    # the systems are compared on the same user turns
    assert {comparison.test.n_items for comparison in summary.comparisons} == {4}


def test_the_csv_and_the_api_carry_the_turn(rated_study, client_for):
    exported = list(csv.DictReader(io.StringIO(summary_csv(summarise_study(rated_study)))))
    by_turn = [row for row in exported if row["figure"] == "mos_by_turn"]
    assert len(by_turn) == 2 * 4 * 2  # systems x dimensions x turns
    prosody_b2 = next(
        row
        for row in by_turn
        if (row["system"], row["dimension"], row["turn"]) == ("SecretSystemB", "prosody", "2")
    )
    assert prosody_b2["estimate"] == "2.0000" and (prosody_b2["n_outputs"], prosody_b2["n_expected"]) == (
        "2",
        "2",
    )
    assert all(row["turn"] == "" for row in exported if row["figure"] != "mos_by_turn")

    admin = client_for("admin")
    served = admin.get(reverse("evaluation:study_results_csv", args=[rated_study.pk])).content.decode()
    assert "mos_by_turn,prosody,SecretSystemB" in served
    api = admin.get(reverse("evaluation:api_study_results", args=[rated_study.pk])).json()
    assert len(api["mos_by_turn"]) == 16
    assert {(cell["system"], cell["turn"], cell["mean"]) for cell in api["mos_by_turn"]} == {
        ("SecretSystemA", 1, 3.0),
        ("SecretSystemA", 2, 4.0),
        ("SecretSystemB", 1, 1.0),
        ("SecretSystemB", 2, 2.0),
    }


def test_the_results_page_shows_the_turn_table_and_chart(rated_study, client_for):
    page = (
        client_for("admin").get(reverse("evaluation:study_results", args=[rated_study.pk])).content.decode()
    )

    assert 'data-testid="turn-table"' in page and 'data-testid="turn-chart"' in page
    assert "2 dialogues per system" in page and "js/study_turn_chart.js" in page
    assert 'id="turn-chart-data"' in page
