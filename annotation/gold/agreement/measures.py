"""Inter-annotator agreement per label field, and each annotator's agreement with gold and peers.

A thin layer over webapp.lib.stats: it turns label documents into the units x raters tables and
label sets those functions take. Levels follow the fields: nominal alpha for names (polarity,
emotion, intonation, the conflict flag), ordinal alpha for ordered scales (intensity and the
low/normal/high prosody levels, mapped to their rank), MASI and Jaccard for label sets (stressed
words, recommended and not-recommended strategies). A dialogue's later turns add nominal alpha
for their cross-turn categories (emotion change, whether the last strategy helped), and dialogue
items get a breakdown per turn number. The pure functions take plain records;
`load_agreement_report` reads them from the database.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from annotation.labelling.comparison import Labels
from annotation.labelling.dialogue.cross_turn import CROSS_TURN_CATEGORICAL_FIELDS
from annotation.labelling.schema import NOMINAL_FIELDS, ORDINAL_SCALES
from webapp.lib.stats import (
    SetSimilarity,
    agreement_with_gold,
    krippendorff_alpha,
    masi,
    mean_pairwise_set_agreement,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser

    from webapp.models import User

CATEGORICAL_FIELDS: tuple[tuple[str, str, str], ...] = (
    *((name, "nominal", name.replace("_", " ").capitalize()) for name in NOMINAL_FIELDS),
    ("modality_conflict", "nominal", "Text-voice conflict"),
    *((name, "ordinal", name.capitalize()) for name in ORDINAL_SCALES),
)
# A later dialogue turn's cross-turn categories: names, so nominal alpha.
_CROSS_TURN_LABELS = {"emotion_change": "Emotion change", "last_strategy_helped": "Last strategy helped"}
CROSS_TURN_FIELDS: tuple[tuple[str, str, str], ...] = tuple(
    (name, "nominal", _CROSS_TURN_LABELS[name]) for name in CROSS_TURN_CATEGORICAL_FIELDS
)
SET_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("perception", "stressed_words", "Stressed words"),
    ("tom", "recommended_strategies", "Recommended strategies"),
    ("tom", "not_recommended_strategies", "Not-recommended strategies"),
)

SET_MEASURES: tuple[SetSimilarity, ...] = ("masi", "jaccard")


@dataclass(frozen=True)
class AnnotatorLabels:
    item: str
    annotator: str
    perception: Mapping[str, Any]
    tom: Mapping[str, Any]
    submitted_at: datetime | None = None
    cross_turn: Mapping[str, Any] = field(default_factory=dict)  # a later dialogue turn's
    turn: int | None = None  # the item's dialogue turn (None: a single item)


@dataclass(frozen=True)
class FieldAgreement:
    field: str
    label: str
    measure: str  # "alpha (nominal)", "alpha (ordinal)", "MASI", "Jaccard"
    value: float | None  # None when undefined; `note` says why
    n_items: int  # items with two or more annotations of the field
    note: str = ""


@dataclass(frozen=True)
class AnnotatorAgreement:
    annotator: str
    n_submitted: int
    n_with_gold: int
    with_gold: float | None  # mean exact agreement with gold over the categorical fields
    sets_with_gold: float | None  # mean MASI with gold over the set fields
    with_peers: float | None  # mean exact agreement with co-annotators over the categorical fields
    per_field: dict[str, float | None]  # field -> agreement with gold


@dataclass(frozen=True)
class DriftPoint:
    annotator: str
    week: date  # the Monday of the week the annotations were submitted
    with_gold: float
    n_items: int


@dataclass(frozen=True)
class TurnAgreement:
    """Agreement over the dialogue items of one turn number (turn 1 of every dialogue, turn 2 ...)."""

    turn: int
    n_items: int
    fields: list[FieldAgreement]  # the categorical fields, and the cross-turn ones from turn 2


@dataclass(frozen=True)
class AgreementReport:
    n_items: int
    n_annotations: int
    n_gold: int
    fields: list[FieldAgreement]  # cross-turn categories included, after the perception ones
    annotators: list[AnnotatorAgreement]
    drift: list[DriftPoint]
    turns: list[TurnAgreement] = field(default_factory=list)
    # Items left out for the viewer: those they are still labelling (peers' labels are not theirs yet).
    n_hidden: int = 0


def categorical_value(labels: AnnotatorLabels | Labels, field: str) -> Hashable | None:
    """Return a categorical field's value as alpha needs it: the rank on ordinal scales, None when empty."""
    value = labels.perception.get(field)
    if value is None or value == "":
        return None
    if field in ORDINAL_SCALES:
        scale = ORDINAL_SCALES[field]
        return scale.index(value) if value in scale else None
    named: Hashable = value
    return named


def cross_turn_value(labels: AnnotatorLabels | Labels, field_name: str) -> Hashable | None:
    """Return a cross-turn category as alpha needs it: None when empty (or the item has none)."""
    value = labels.cross_turn.get(field_name)
    return value if isinstance(value, str) and value else None


def _units(records: Sequence[AnnotatorLabels]) -> dict[str, list[AnnotatorLabels]]:
    by_item: dict[str, list[AnnotatorLabels]] = defaultdict(list)
    for record in records:
        by_item[record.item].append(record)
    return by_item


def field_agreements(records: Sequence[AnnotatorLabels]) -> list[FieldAgreement]:
    """Return alpha for every categorical field and MASI and Jaccard for every set field."""
    units = list(_units(records).values())
    results = categorical_agreements(units)
    for section, name, label in SET_FIELDS:
        sets = [[_label_set(record, section, name) for record in unit] for unit in units]
        rated_twice = sum(1 for unit in sets if len(unit) >= 2)
        for measure in SET_MEASURES:
            set_value = mean_pairwise_set_agreement(sets, measure) if rated_twice else None
            results.append(
                FieldAgreement(
                    name,
                    label,
                    "MASI" if measure == "masi" else "Jaccard",
                    set_value,
                    rated_twice,
                    "" if rated_twice else "no item has two annotations yet",
                )
            )
    return results


def categorical_agreements(units: Sequence[Sequence[AnnotatorLabels]]) -> list[FieldAgreement]:
    """Return alpha for every categorical field and, where any unit has them, the cross-turn ones."""
    results = [
        _alpha(name, level, label, [[categorical_value(record, name) for record in unit] for unit in units])
        for name, level, label in CATEGORICAL_FIELDS
    ]
    crossing = [unit for unit in units if any(record.cross_turn for record in unit)]
    if crossing:
        results += [
            _alpha(
                name, level, label, [[cross_turn_value(record, name) for record in unit] for unit in crossing]
            )
            for name, level, label in CROSS_TURN_FIELDS
        ]
    return results


def _alpha(name: str, level: str, label: str, table: list[list[Hashable | None]]) -> FieldAgreement:
    rated_twice = sum(1 for row in table if sum(value is not None for value in row) >= 2)
    value: float | None = None
    note = ""
    if rated_twice == 0:
        note = "no item has two annotations yet"
    elif rated_twice == 1:
        # One item is no sample: its alpha is 0 when the two differ and undefined when they agree,
        # whatever the annotators' habits; shown as a red 0.000 it read as "no agreement".
        note = "only one item has two annotations: alpha needs two or more"
    else:
        try:
            value = krippendorff_alpha(table, "ordinal" if level == "ordinal" else "nominal")
        except ValueError:
            note = "every annotation gives the same value: alpha is undefined"
    return FieldAgreement(name, label, f"alpha ({level})", value, rated_twice, note)


def turn_agreements(records: Sequence[AnnotatorLabels]) -> list[TurnAgreement]:
    """Return the categorical (and cross-turn) agreement of dialogue items, one row per turn number."""
    by_turn: dict[int, list[AnnotatorLabels]] = defaultdict(list)
    for record in records:
        if record.turn is not None:
            by_turn[record.turn].append(record)
    rows = []
    for turn, turn_records in sorted(by_turn.items()):
        units = list(_units(turn_records).values())
        rows.append(TurnAgreement(turn, len(units), categorical_agreements(units)))
    return rows


def _label_set(labels: AnnotatorLabels | Labels, section: str, field: str) -> frozenset[str]:
    document = labels.perception if section == "perception" else labels.tom
    return frozenset(document.get(field) or [])


def annotator_agreements(
    records: Sequence[AnnotatorLabels], gold: Mapping[str, Labels]
) -> list[AnnotatorAgreement]:
    """Return each annotator's agreement with the gold references and with their co-annotators."""
    by_annotator: dict[str, dict[str, AnnotatorLabels]] = defaultdict(dict)
    for record in records:
        by_annotator[record.annotator][record.item] = record

    per_field: dict[str, dict[str, float | None]] = defaultdict(dict)
    for name, _, _ in CATEGORICAL_FIELDS:
        # An empty field is "not labelled", never agreement: leave it out on either side.
        values = {
            annotator: {
                item: value
                for item, record in labels.items()
                if (value := categorical_value(record, name)) is not None
            }
            for annotator, labels in by_annotator.items()
        }
        gold_values = {
            item: value
            for item, labels in gold.items()
            if (value := categorical_value(labels, name)) is not None
        }
        for annotator, result in agreement_with_gold(values, gold_values).items():
            per_field[annotator][name] = None if math.isnan(result.agreement) else result.agreement
    for section, name, _ in SET_FIELDS:
        set_values = {
            annotator: {item: _label_set(record, section, name) for item, record in labels.items()}
            for annotator, labels in by_annotator.items()
        }
        gold_sets = {item: _label_set(labels, section, name) for item, labels in gold.items()}
        for annotator, result in agreement_with_gold(set_values, gold_sets, masi).items():
            per_field[annotator][name] = None if math.isnan(result.agreement) else result.agreement

    peers = _peer_agreement(records)
    categorical_names = [name for name, _, _ in CATEGORICAL_FIELDS]
    set_names = [name for _, name, _ in SET_FIELDS]
    return [
        AnnotatorAgreement(
            annotator=annotator,
            n_submitted=len(labels),
            n_with_gold=sum(1 for item in labels if item in gold),
            with_gold=_mean([per_field[annotator][name] for name in categorical_names]),
            sets_with_gold=_mean([per_field[annotator][name] for name in set_names]),
            with_peers=peers.get(annotator),
            per_field=dict(per_field[annotator]),
        )
        for annotator, labels in sorted(by_annotator.items())
    ]


def _mean(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return float(np.mean(present)) if present else None


def _peer_agreement(records: Sequence[AnnotatorLabels]) -> dict[str, float]:
    """Return each annotator's share of categorical fields equal to a co-annotator's, over all pairs."""
    matches: dict[str, list[float]] = defaultdict(list)
    for unit in _units(records).values():
        for a, b in combinations(unit, 2):
            for name, _, _ in CATEGORICAL_FIELDS:
                left, right = categorical_value(a, name), categorical_value(b, name)
                if left is None or right is None:
                    continue
                matches[a.annotator].append(float(left == right))
                matches[b.annotator].append(float(left == right))
    return {annotator: float(np.mean(values)) for annotator, values in matches.items()}


def drift_by_week(records: Sequence[AnnotatorLabels], gold: Mapping[str, Labels]) -> list[DriftPoint]:
    """Return each annotator's categorical agreement with gold per week of submission."""
    buckets: dict[tuple[str, date], list[float]] = defaultdict(list)
    items: dict[tuple[str, date], set[str]] = defaultdict(set)
    for record in records:
        reference = gold.get(record.item)
        if reference is None or record.submitted_at is None:
            continue
        day = record.submitted_at.date()
        week = day - timedelta(days=day.weekday())
        for name, _, _ in CATEGORICAL_FIELDS:
            value, expected = categorical_value(record, name), categorical_value(reference, name)
            if value is not None and expected is not None:
                buckets[(record.annotator, week)].append(float(value == expected))
                items[(record.annotator, week)].add(record.item)
    return [
        DriftPoint(annotator, week, float(np.mean(values)), len(items[(annotator, week)]))
        for (annotator, week), values in sorted(buckets.items())
    ]


def agreement_report(records: Sequence[AnnotatorLabels], gold: Mapping[str, Labels]) -> AgreementReport:
    """Return every figure of the agreement dashboard for these annotations and gold references."""
    return AgreementReport(
        n_items=len({record.item for record in records}),
        n_annotations=len(records),
        n_gold=len(gold),
        fields=field_agreements(records),
        annotators=annotator_agreements(records, gold),
        drift=drift_by_week(records, gold),
        turns=turn_agreements(records),
    )


def load_agreement_report(viewer: User | AnonymousUser, scenario: str | None = None) -> AgreementReport:
    """Return the agreement report over submitted annotations (of one scenario, if given), as
    `viewer` may see it: without the items they are still labelling, whose peers' labels and gold
    are not theirs to see yet (`gold.access.gold_hidden_from`). Every figure, drift and the
    per-scenario ones included, stays the same while a peer submits such an item."""
    # Imported here so the statistics above stay importable without Django, like webapp.lib.stats.
    from annotation.gold.access import gold_hidden_from
    from annotation.gold.models import GoldReference
    from annotation.labelling.models import Annotation

    hidden = gold_hidden_from(viewer)
    # In assignment order, as before submitted() existed; the report's peer pairs follow it.
    annotations = Annotation.objects.submitted().exclude(item_id__in=hidden).order_by("assigned_at", "pk")
    golds = GoldReference.objects.current().exclude(item_id__in=hidden)
    hidden_items = Annotation.objects.filter(item_id__in=hidden)
    if scenario:
        annotations = annotations.filter(item__scenario=scenario)
        golds = golds.filter(item__scenario=scenario)
        hidden_items = hidden_items.filter(item__scenario=scenario)
    records = [
        AnnotatorLabels(
            item=str(row["item_id"]),
            annotator=row["annotator__username"],
            perception=row["perception"],
            tom=row["tom"],
            submitted_at=row["submitted_at"],
            cross_turn=row["cross_turn"] or {},
            turn=row["item__turn"],
        )
        for row in annotations.values(
            "item_id", "annotator__username", "perception", "tom", "submitted_at", "cross_turn", "item__turn"
        )
    ]
    gold = {
        str(row["item_id"]): Labels(row["perception"], row["tom"], row["cross_turn"] or {})
        for row in golds.values("item_id", "perception", "tom", "cross_turn")
    }
    report = agreement_report(records, gold)
    return replace(report, n_hidden=hidden_items.values("item_id").distinct().count())
