"""Agreement on the cross-turn categories and per dialogue turn, against hand-computed alpha.

Three annotators A, B, C; three dialogues d1..d3 of two turns, and one single item.

turn 2     emotion change (nominal)              last strategy helped (nominal)
  d1.t2:   eased       eased       eased         yes    yes    no
  d2.t2:   eased       eased       intensified   partly partly partly
  d3.t2:   intensified intensified intensified   no     no     no
turn 1     emotion: d1 sad sad sad, d2 fear fear fear, d3 sad sad fear  (no cross-turn labels)
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.gold.agreement.measures import (
    AnnotatorLabels,
    agreement_report,
    field_agreements,
    turn_agreements,
)

CHANGE = {"d1": ["eased"] * 3, "d2": ["eased", "eased", "intensified"], "d3": ["intensified"] * 3}
HELPED = {"d1": ["yes", "yes", "no"], "d2": ["partly"] * 3, "d3": ["no"] * 3}
FIRST_EMOTION = {"d1": ["sad"] * 3, "d2": ["fear"] * 3, "d3": ["sad", "sad", "fear"]}


def records() -> list[AnnotatorLabels]:
    rows = []
    for dialogue in CHANGE:
        for index, annotator in enumerate("ABC"):
            rows.append(
                AnnotatorLabels(
                    item=f"{dialogue}.t1",
                    annotator=annotator,
                    perception={"emotion": FIRST_EMOTION[dialogue][index]},
                    tom={},
                    turn=1,
                )
            )
            rows.append(
                AnnotatorLabels(
                    item=f"{dialogue}.t2",
                    annotator=annotator,
                    perception={"emotion": "fear"},
                    tom={},
                    cross_turn={
                        "emotion_change": CHANGE[dialogue][index],
                        "last_strategy_helped": HELPED[dialogue][index],
                    },
                    turn=2,
                )
            )
    # A single item: no turn, no cross-turn labels; it must not join any turn's figures.
    rows += [AnnotatorLabels("single", annotator, {"emotion": "happy"}, {}) for annotator in "ABC"]
    return rows


def value(rows, field: str) -> float | None:
    return next(row.value for row in rows if row.field == field)


def test_nominal_alpha_for_the_emotion_change() -> None:
    # Pairs within a unit weigh 1/(m-1) = 1/2. o[e,e] = 3 + 1, o[e,i] = o[i,e] = 1, o[i,i] = 3;
    # n_e = 5, n_i = 4, n = 9. D_o = 2/9; D_e = 2 * 5 * 4 / (9 * 8) = 5/9; alpha = 1 - 2/5.
    assert value(field_agreements(records()), "emotion_change") == pytest.approx(0.6)


def test_nominal_alpha_for_whether_the_last_strategy_helped() -> None:
    # o[y,y] = 1, o[y,n] = o[n,y] = 1, o[p,p] = 3, o[n,n] = 3; n_y = 2, n_p = 3, n_n = 4, n = 9.
    # D_o = 2/9; D_e = 2 * (2*3 + 2*4 + 3*4) / 72 = 52/72; alpha = 1 - 16/52 = 9/13.
    assert value(field_agreements(records()), "last_strategy_helped") == pytest.approx(9 / 13)


def test_cross_turn_rows_count_only_items_that_have_them() -> None:
    row = next(row for row in field_agreements(records()) if row.field == "emotion_change")
    assert (row.measure, row.n_items) == ("alpha (nominal)", 3)


def test_the_per_turn_breakdown() -> None:
    turns = turn_agreements(records())
    assert [(row.turn, row.n_items) for row in turns] == [(1, 3), (2, 3)]
    first, second = ({entry.field: entry for entry in row.fields} for row in turns)
    # Turn 1 emotion: o[s,s] = 3 + 1, o[s,f] = o[f,s] = 1, o[f,f] = 3: the same table as above, 0.6.
    assert first["emotion"].value == pytest.approx(0.6)
    assert "emotion_change" not in first  # turn 1 has no previous turn
    assert second["emotion_change"].value == pytest.approx(0.6)
    assert second["last_strategy_helped"].value == pytest.approx(9 / 13)
    assert second["emotion"].value is None and "same value" in second["emotion"].note


def test_a_report_without_dialogues_has_no_turns_and_no_cross_turn_rows() -> None:
    single = [row for row in records() if row.turn is None]
    report = agreement_report(single, {})
    assert report.turns == []
    assert {row.field for row in report.fields}.isdisjoint({"emotion_change", "last_strategy_helped"})


@pytest.mark.django_db
def test_the_agreement_page_shows_turns_and_cross_turn_fields(users, trio, client_for) -> None:
    from tests.annotation.labelling.dialogue.support import cross_turn, recorded_dialogue, submit_turn
    from tests.annotation.labelling.support import assign

    _, items = recorded_dialogue(2)
    for item in items:
        for annotation, change in zip(assign(item, *trio), ("eased", "eased", "shifted"), strict=True):
            submit_turn(
                annotation, cross_turn=cross_turn(emotion_change=change) if (item.turn or 0) > 1 else {}
            )
    page = client_for("lead").get(reverse("annotation:agreement"))
    assert page.status_code == 200
    text = page.content.decode()
    assert 'data-testid="turn-agreement"' in text and 'id="turns-chart"' in text
    assert 'data-field="emotion_change"' in text
    chart = page.context["chart_data"]["turns"]
    assert chart["labels"] == ["turn 1", "turn 2"]
    assert [series["label"] for series in chart["series"]][-2:] == ["Emotion change", "Last strategy helped"]
    assert client_for("annotator").get(reverse("annotation:agreement")).status_code in (302, 403)
