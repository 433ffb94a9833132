"""Compare several annotators' labels of one item field by field, and propose a gold reference.

The adjudication page shows these comparisons side by side; agreed fields come pre-filled and
disagreements are highlighted. A field is agreed when every annotator gave the same value:
categorical fields exactly, free text after collapsing whitespace and case, sets as sets, and
emotion segments when they name the same emotions in the same order (their boundaries always
differ by a few milliseconds, so times are not compared).

The proposal is what the lead starts from (and what a fast-track saves): a strict-majority value
for categorical fields (empty on a tie, so the lead must choose), the labels chosen by a strict
majority for sets, and for free text and segments the value of the "medoid" annotation, the one
agreeing most with the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from annotation.labelling.dialogue.cross_turn import CROSS_TURN_CATEGORICAL_FIELDS, normalise_cross_turn
from annotation.labelling.schema import (
    PERCEPTION_CATEGORICAL_FIELDS,
    field_label,
    normalise_perception,
    normalise_tom,
)
from webapp.lib.stats import masi

Section = Literal["perception", "tom", "cross_turn"]
FieldKind = Literal["categorical", "flag", "text", "set", "segments"]


@dataclass(frozen=True)
class Labels:
    perception: Mapping[str, Any]
    tom: Mapping[str, Any]
    # A later dialogue turn's cross-turn labels; {} for every other item.
    cross_turn: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FieldSpec:
    section: Section
    name: str
    kind: FieldKind

    @property
    def path(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def label(self) -> str:
        return field_label(self.path)


# Every field of both documents, in the order the workbench and the adjudication page show them.
FIELD_SPECS: tuple[FieldSpec, ...] = (
    FieldSpec("perception", "polarity", "categorical"),
    FieldSpec("perception", "emotion", "categorical"),
    FieldSpec("perception", "emotion_variant", "text"),
    FieldSpec("perception", "intensity", "categorical"),
    FieldSpec("perception", "pitch", "categorical"),
    FieldSpec("perception", "energy", "categorical"),
    FieldSpec("perception", "rate", "categorical"),
    FieldSpec("perception", "intonation", "categorical"),
    FieldSpec("perception", "stressed_words", "set"),
    FieldSpec("perception", "prosody_caption", "text"),
    FieldSpec("perception", "situation", "text"),
    FieldSpec("perception", "modality_conflict", "flag"),
    FieldSpec("perception", "conflict_kind", "categorical"),
    FieldSpec("perception", "emotion_segments", "segments"),
    FieldSpec("tom", "context", "text"),
    FieldSpec("tom", "latent_need", "text"),
    FieldSpec("tom", "core_demand", "text"),
    FieldSpec("tom", "recommended_strategies", "set"),
    FieldSpec("tom", "not_recommended_strategies", "set"),
    FieldSpec("tom", "constraints", "set"),
)
# A later dialogue turn's cross-turn fields (annotation.labelling.dialogue.cross_turn), shown after ToM.
CROSS_TURN_SPECS: tuple[FieldSpec, ...] = (
    FieldSpec("cross_turn", "emotion_change", "categorical"),
    FieldSpec("cross_turn", "emotion_change_cause", "text"),
    FieldSpec("cross_turn", "last_strategy_helped", "categorical"),
    FieldSpec("cross_turn", "strategy_adaptation", "text"),
    FieldSpec("cross_turn", "adaptation_strategies", "set"),
)
# "All categorical fields agree" (fast-track) covers the labelled categories and the conflict flag.
FAST_TRACK_FIELDS = (*PERCEPTION_CATEGORICAL_FIELDS, "modality_conflict", "conflict_kind")


@dataclass(frozen=True)
class FieldComparison:
    spec: FieldSpec
    values: tuple[Any, ...]  # one per annotation, in the order given
    agreed: bool
    proposal: Any

    @property
    def path(self) -> str:
        return self.spec.path


def compare_labels(labels: Sequence[Labels], script_words: Sequence[str] = ()) -> list[FieldComparison]:
    """Return one comparison per field of `labels` (two or more annotations of one item).

    `script_words` orders the proposed stressed words as they occur in the script.
    """
    if not labels:
        raise ValueError("nothing to compare: no annotations")
    specs = _specs(labels)
    documents = [
        {
            "perception": normalise_perception(entry.perception),
            "tom": normalise_tom(entry.tom),
            "cross_turn": normalise_cross_turn(entry.cross_turn, needed=True),
        }
        for entry in labels
    ]
    medoid = documents[_medoid_index(documents, specs)]
    comparisons = []
    for spec in specs:
        values = tuple(document[spec.section][spec.name] for document in documents)
        comparisons.append(
            FieldComparison(
                spec=spec,
                values=values,
                agreed=_agreed(spec.kind, values),
                proposal=_proposal(spec, values, medoid[spec.section][spec.name], script_words),
            )
        )
    return comparisons


def _specs(labels: Sequence[Labels]) -> tuple[FieldSpec, ...]:
    """Every field of the documents: the cross-turn ones when the annotations hold them (a later turn)."""
    return (*FIELD_SPECS, *CROSS_TURN_SPECS) if any(entry.cross_turn for entry in labels) else FIELD_SPECS


def readable_fields(
    perception: Mapping[str, Any], tom: Mapping[str, Any], strategy_names: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """Return (human label, text) for every filled field of a pair of label documents, in the
    workbench's order, for pages that show a reference to people (never as raw JSON)."""
    documents = {"perception": normalise_perception(perception), "tom": normalise_tom(tom)}
    names = strategy_names or {}
    rows = []
    for spec in FIELD_SPECS:
        value = documents[spec.section][spec.name]
        if spec.kind == "flag":
            text = "yes" if value else ""
        elif spec.kind == "segments":
            text = "; ".join(
                f"{float(s.get('start', 0)):.2f}–{float(s.get('end', 0)):.2f} s {s.get('emotion') or '?'}"
                + (f" (“{s['words']}”)" if s.get("words") else "")
                for s in value
                if isinstance(s, Mapping)
            )
        elif spec.kind == "set":
            text = ", ".join(names.get(entry, entry) for entry in value)
        else:
            text = str(value)
        if text:
            rows.append((spec.label, text))
    return rows


def categorical_fields_agree(comparisons: Sequence[FieldComparison]) -> bool:
    """Return True when every fast-track field agrees (the item may be fast-tracked)."""
    by_name = {comparison.spec.name: comparison for comparison in comparisons}
    crossing = [name for name in CROSS_TURN_CATEGORICAL_FIELDS if name in by_name]
    return all(by_name[name].agreed for name in (*FAST_TRACK_FIELDS, *crossing))


def labels_agree_on_categories(labels: Sequence[Labels]) -> bool:
    """Return True when two or more annotations agree on every fast-track field (a cheap check for lists)."""
    if len(labels) < 2:
        return False
    documents = [normalise_perception(entry.perception) for entry in labels]
    if not all(len({document[name] for document in documents}) == 1 for name in FAST_TRACK_FIELDS):
        return False
    # A later dialogue turn fast-tracks only when its cross-turn categories agree too.
    crossing = [normalise_cross_turn(entry.cross_turn, needed=True) for entry in labels if entry.cross_turn]
    return not crossing or all(
        len({document[name] for document in crossing}) == 1 for name in CROSS_TURN_CATEGORICAL_FIELDS
    )


def proposed_labels(comparisons: Sequence[FieldComparison]) -> Labels:
    """Return the proposed gold reference: every field's proposal, as complete documents."""
    perception = {c.spec.name: c.proposal for c in comparisons if c.spec.section == "perception"}
    tom = {c.spec.name: c.proposal for c in comparisons if c.spec.section == "tom"}
    cross_turn = {c.spec.name: c.proposal for c in comparisons if c.spec.section == "cross_turn"}
    return Labels(
        perception=normalise_perception(perception),
        tom=normalise_tom(tom),
        cross_turn=normalise_cross_turn(cross_turn, needed=bool(cross_turn)),
    )


def _comparable(kind: FieldKind, value: Any) -> Hashable:
    if kind == "text":
        return " ".join(str(value).split()).casefold()
    if kind == "set":
        return frozenset(value)
    if kind == "segments":
        return tuple(segment.get("emotion", "") for segment in value)
    return value


def _agreed(kind: FieldKind, values: Sequence[Any]) -> bool:
    return len({_comparable(kind, value) for value in values}) == 1


def _proposal(spec: FieldSpec, values: Sequence[Any], medoid_value: Any, script_words: Sequence[str]) -> Any:
    if spec.kind == "categorical":
        value, count = Counter(values).most_common(1)[0]
        return value if count * 2 > len(values) else ""
    if spec.kind == "flag":
        value, count = Counter(values).most_common(1)[0]
        return value if count * 2 > len(values) else medoid_value
    if spec.kind == "set":
        return _majority_set(values, script_words if spec.name == "stressed_words" else ())
    return medoid_value


def _majority_set(values: Sequence[Sequence[str]], order: Sequence[str]) -> list[str]:
    votes: Counter[str] = Counter(label for labels in values for label in set(labels))
    first_seen: dict[str, int] = {}
    for labels in values:
        for label in labels:
            first_seen.setdefault(label, len(first_seen))
    position = {word.casefold(): index for index, word in reversed(list(enumerate(order)))}
    chosen = [label for label, count in votes.items() if count * 2 > len(values)]
    return sorted(chosen, key=lambda label: (position.get(label.casefold(), len(order)), first_seen[label]))


def _medoid_index(documents: Sequence[Mapping[str, Mapping[str, Any]]], specs: Sequence[FieldSpec]) -> int:
    """Return the index of the document most similar to all the others (the first on ties)."""

    def similarity(a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]]) -> float:
        total = 0.0
        for spec in specs:
            left, right = a[spec.section][spec.name], b[spec.section][spec.name]
            if spec.kind == "set":
                total += masi(left, right)
            elif spec.kind != "text":
                total += float(_comparable(spec.kind, left) == _comparable(spec.kind, right))
        return total

    scores = [
        sum(similarity(document, other) for j, other in enumerate(documents) if j != i)
        for i, document in enumerate(documents)
    ]
    return scores.index(max(scores))
