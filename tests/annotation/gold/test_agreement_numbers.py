"""Agreement figures against hand-computed values (three items, three annotators A, B, C).

polarity (nominal)      intensity (ordinal)          recommended strategies (sets)
  item1: neg neg neg      item1: low    low    medium    item1: {a,b} {a,b} {a}
  item2: neg neg pos      item2: medium medium medium    item2: {c}   {d}   {c}
  item3: pos pos pos      item3: high   high   medium    item3: {a}   {a}   {a}
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from annotation.gold.agreement.measures import (
    AnnotatorLabels,
    agreement_report,
    annotator_agreements,
    field_agreements,
)
from annotation.labelling.comparison import Labels

POLARITY = {
    "item1": ["negative"] * 3,
    "item2": ["negative", "negative", "positive"],
    "item3": ["positive"] * 3,
}
INTENSITY = {"item1": ["low", "low", "medium"], "item2": ["medium"] * 3, "item3": ["high", "high", "medium"]}
STRATEGIES = {"item1": [["a", "b"], ["a", "b"], ["a"]], "item2": [["c"], ["d"], ["c"]], "item3": [["a"]] * 3}
GOLD = {
    "item1": Labels({"polarity": "negative", "intensity": "low"}, {"recommended_strategies": ["a", "b"]}),
    "item2": Labels({"polarity": "negative", "intensity": "medium"}, {"recommended_strategies": ["c"]}),
    "item3": Labels({"polarity": "positive", "intensity": "high"}, {"recommended_strategies": ["a"]}),
}


def records(submitted_at: dict[str, datetime] | None = None) -> list[AnnotatorLabels]:
    rows = []
    for item in POLARITY:
        for index, annotator in enumerate("ABC"):
            rows.append(
                AnnotatorLabels(
                    item=item,
                    annotator=annotator,
                    perception={"polarity": POLARITY[item][index], "intensity": INTENSITY[item][index]},
                    tom={"recommended_strategies": STRATEGIES[item][index]},
                    submitted_at=(submitted_at or {}).get(item),
                )
            )
    return rows


def figure(field: str, measure: str) -> float | None:
    return next(
        row.value for row in field_agreements(records()) if row.field == field and row.measure == measure
    )


def test_nominal_alpha_for_polarity() -> None:
    # Coincidences o[n,n] = 3 + 1, o[n,p] = o[p,n] = 1, o[p,p] = 3; n_neg = 5, n_pos = 4, n = 9.
    # alpha = 1 - (n - 1) * (o[n,p] + o[p,n]) / (2 * n_neg * n_pos) = 1 - 8 * 2 / 40 = 0.6
    assert figure("polarity", "alpha (nominal)") == pytest.approx(0.6)


def test_ordinal_alpha_for_intensity_uses_the_ranks() -> None:
    # o[l,m] = o[m,l] = 1, o[m,h] = o[h,m] = 1; n_low = 2, n_medium = 5, n_high = 2, n = 9.
    # d2(l,m) = (2 + 5 - 7/2)^2 = 12.25 = d2(m,h); d2(l,h) = (2 + 5 + 2 - 2)^2 = 49.
    # observed 4 * 12.25 = 49; expected 2 * (10 * 12.25 + 10 * 12.25 + 4 * 49) = 882.
    # alpha = 1 - 8 * 49 / 882 = 5/9
    assert figure("intensity", "alpha (ordinal)") == pytest.approx(5 / 9)


def test_masi_and_jaccard_for_strategy_sets() -> None:
    # item1: MASI pairs 1, 1/3, 1/3 -> 5/9; Jaccard 1, 1/2, 1/2 -> 2/3
    # item2: MASI 0, 1, 0 -> 1/3 (Jaccard the same); item3: 1
    assert figure("recommended_strategies", "MASI") == pytest.approx((5 / 9 + 1 / 3 + 1) / 3)
    assert figure("recommended_strategies", "Jaccard") == pytest.approx((2 / 3 + 1 / 3 + 1) / 3)


def test_undefined_figures_say_why() -> None:
    rows = {row.field: row for row in field_agreements(records()) if row.measure.startswith("alpha")}
    assert rows["emotion"].value is None
    assert rows["emotion"].note == "no item has two annotations yet"
    same = [
        AnnotatorLabels(item=item, annotator=name, perception={"emotion": "sad"}, tom={})
        for item in "xy"
        for name in "AB"
    ]
    emotion = next(row for row in field_agreements(same) if row.field == "emotion")
    assert emotion.value is None
    assert "undefined" in emotion.note


def test_one_item_rated_twice_gives_no_alpha() -> None:
    # A single unit's alpha is 0 whenever its two values differ: not a figure about the annotators.
    one = [
        AnnotatorLabels(item="x", annotator=name, perception={"emotion": emotion}, tom={})
        for name, emotion in (("A", "sad"), ("B", "fear"))
    ]
    emotion = next(row for row in field_agreements(one) if row.field == "emotion")
    assert emotion.value is None and emotion.n_items == 1
    assert emotion.note == "only one item has two annotations: alpha needs two or more"


def test_each_annotator_against_gold_and_peers() -> None:
    result = {row.annotator: row for row in annotator_agreements(records(), GOLD)}
    # A matches gold on every polarity and intensity; C on polarity 2 of 3 and intensity 1 of 3.
    assert result["A"].per_field["polarity"] == pytest.approx(1.0)
    assert result["C"].per_field["polarity"] == pytest.approx(2 / 3)
    assert result["C"].per_field["intensity"] == pytest.approx(1 / 3)
    assert result["C"].with_gold == pytest.approx((2 / 3 + 1 / 3) / 2)
    # C's strategies against gold: MASI({a},{a,b}) = 1/3, {c} vs {c} = 1, {a} vs {a} = 1.
    assert result["C"].per_field["recommended_strategies"] == pytest.approx((1 / 3 + 1 + 1) / 3)
    # C against A and B: polarity 2 + 0 + 2 of 6, intensity 0 + 2 + 0 of 6 -> 6 of 12.
    assert result["C"].with_peers == pytest.approx(0.5)
    assert result["C"].n_with_gold == 3


def test_drift_is_agreement_with_gold_per_week_of_submission() -> None:
    monday = datetime(2026, 3, 2, 9, tzinfo=UTC)
    report = agreement_report(
        records(
            {
                "item1": monday,
                "item2": datetime(2026, 3, 4, tzinfo=UTC),
                "item3": datetime(2026, 3, 10, tzinfo=UTC),
            }
        ),
        GOLD,
    )
    c_points = [
        (point.week, point.with_gold, point.n_items) for point in report.drift if point.annotator == "C"
    ]
    # Week of 2 March: item1 (polarity yes, intensity no), item2 (no, yes) -> 2 of 4.
    # Week of 9 March: item3 (yes, no) -> 1 of 2.
    assert c_points == [(date(2026, 3, 2), 0.5, 2), (date(2026, 3, 9), 0.5, 1)]
    assert (report.n_items, report.n_annotations, report.n_gold) == (3, 9, 3)
